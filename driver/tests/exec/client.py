#!/usr/bin/env python3
"""A stand-in for clients of `codex exec --json`, shaped like OpenAI's TypeScript SDK
(`@openai/codex-sdk`): one `codex exec --experimental-json` process per turn, the prompt
written to its stdin, the JSONL event stream read from its stdout, and the next turn run as
`codex exec --experimental-json resume THREAD_ID` with the thread id of `thread.started`.

Usage: client.py TURN_TEXT [TURN_TEXT...]; with --schema, the first turn also passes
`--output-schema FILE` (a file in a temporary directory, removed after the run, as the SDK
does). Codex is $CODEX_PARITY_CODEX, else `codex` on PATH. Prints `turn N: FINAL` per turn and
exits non-zero, naming why, on a turn.failed, an error event, a stream without
turn.completed, or a non-zero exit. Python 3.11, standard library only.
"""

import json
import os
import subprocess
import sys
import tempfile

WAIT_S = 60


def run_turn(codex, text, thread_id, schema):
    args = [codex, "exec", "--experimental-json", "--skip-git-repo-check"]
    tmp = None
    if schema:
        tmp = tempfile.mkdtemp(prefix="exec-client-")
        path = os.path.join(tmp, "schema.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"type": "object", "properties": {"answer": {"type": "string"}}}, f)
        args += ["--output-schema", path]
    if thread_id:
        args += ["resume", thread_id]
    try:
        proc = subprocess.run(args, input=text, capture_output=True, text=True, timeout=WAIT_S)
    finally:
        if tmp:
            for name in os.listdir(tmp):
                os.remove(os.path.join(tmp, name))
            os.rmdir(tmp)
    events = []
    for line in proc.stdout.splitlines():
        if line.strip():
            events.append(json.loads(line))
    for e in events:
        if e.get("type") == "thread.started":
            thread_id = e["thread_id"]
        if e.get("type") in ("turn.failed", "error"):
            raise SystemExit(f"exec-client: {e.get('type')}: {json.dumps(e)}")
    if not any(e.get("type") == "turn.completed" for e in events):
        raise SystemExit(f"exec-client: no turn.completed in {len(events)} event(s)")
    if proc.returncode != 0:
        raise SystemExit(f"exec-client: codex exec exited {proc.returncode}: {proc.stderr[-300:]}")
    final = [
        e["item"].get("text", "")
        for e in events
        if e.get("type") == "item.completed" and e.get("item", {}).get("type") == "agent_message"
    ]
    return thread_id, (final[-1] if final else "")


def main():
    args = sys.argv[1:]
    schema = "--schema" in args
    texts = [a for a in args if a != "--schema"]
    if not texts:
        print("usage: client.py [--schema] TURN_TEXT [TURN_TEXT...]", file=sys.stderr)
        return 2
    codex = os.environ.get("CODEX_PARITY_CODEX") or "codex"
    thread_id = None
    for n, text in enumerate(texts, 1):
        thread_id, final = run_turn(codex, text, thread_id, schema and n == 1)
        print(f"turn {n}: {final}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
