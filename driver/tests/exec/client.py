#!/usr/bin/env python3
"""A stand-in for clients of `codex exec --json`, shaped like OpenAI's TypeScript SDK
(`@openai/codex-sdk`): one `codex exec --experimental-json` process per turn, the prompt
written to its stdin, the JSONL event stream read from its stdout, and the next turn run as
`codex exec --experimental-json resume THREAD_ID` with the thread id of `thread.started`.

Usage: client.py [--schema] [--strict | --tolerant] [--print-usage] TURN_TEXT [TURN_TEXT...]

- --schema: the first turn also passes `--output-schema FILE` (a file in a temporary
  directory, removed after the run, as the SDK does).
- default: reads the final message from `item.completed` items of type `agent_message`, as
  the SDK does, ignoring what it does not know.
- --strict: knows the events and item types of codex 0.131.0 and nothing else: an unknown
  event type, item type (the `error` item of 0.140.0 among them) or usage field exits 3.
- --tolerant: also reads the names older releases used (`item.item_type`,
  `assistant_message`), and counts an item once however often it comes.
- --print-usage: prints each turn's token usage after its message.

Codex is $CODEX_PARITY_CODEX, else `codex` on PATH. Prints `turn N: FINAL` per turn and
exits non-zero, naming why, on a turn.failed, an error event, a stream without
turn.completed, or a non-zero exit. Python 3.11, standard library only.
"""

import json
import os
import subprocess
import sys
import tempfile

WAIT_S = 60

# What codex 0.131.0 prints, and nothing more (--strict).
EVENTS = {"thread.started", "turn.started", "turn.completed", "turn.failed", "item.started",
          "item.updated", "item.completed", "error"}
ITEMS = {"agent_message", "reasoning", "command_execution", "file_change", "mcp_tool_call",
         "web_search", "todo_list"}
USAGE = {"input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens"}


def strict_check(e):
    kind = e.get("type")
    if kind not in EVENTS:
        raise SystemExit(f"exec-client: unknown event type {kind!r}")
    item = e.get("item")
    if item is not None and item.get("type") not in ITEMS:
        raise SystemExit(f"exec-client: unknown item type {item.get('type')!r}: {json.dumps(item)}")
    unknown = set((e.get("usage") or {}).keys()) - USAGE
    if unknown:
        raise SystemExit(f"exec-client: unknown usage field(s) {sorted(unknown)}")


def is_message(item, tolerant):
    kind = item.get("type")
    if tolerant and kind is None:
        kind = item.get("item_type")
    return kind == "agent_message" or (tolerant and kind == "assistant_message")


def run_turn(codex, text, thread_id, schema, mode):
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
        if mode == "strict":
            strict_check(e)
        if e.get("type") == "thread.started":
            thread_id = e["thread_id"]
        if e.get("type") in ("turn.failed", "error"):
            raise SystemExit(f"exec-client: {e.get('type')}: {json.dumps(e)}")
    if not any(e.get("type") == "turn.completed" for e in events):
        raise SystemExit(f"exec-client: no turn.completed in {len(events)} event(s)")
    if proc.returncode != 0:
        raise SystemExit(f"exec-client: codex exec exited {proc.returncode}: {proc.stderr[-300:]}")
    tolerant = mode == "tolerant"
    final, seen = [], set()
    for e in events:
        item = e.get("item") or {}
        if e.get("type") != "item.completed" or not is_message(item, tolerant):
            continue
        if tolerant and item.get("id") in seen:
            continue
        seen.add(item.get("id"))
        final.append(item.get("text", ""))
    usage = next((e.get("usage") for e in events if e.get("type") == "turn.completed"), None)
    return thread_id, (final[-1] if final else ""), usage


def main():
    args = sys.argv[1:]
    flags = {"--schema", "--strict", "--tolerant", "--print-usage"}
    schema = "--schema" in args
    mode = "strict" if "--strict" in args else "tolerant" if "--tolerant" in args else "sdk"
    texts = [a for a in args if a not in flags]
    if not texts:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    codex = os.environ.get("CODEX_PARITY_CODEX") or "codex"
    thread_id = None
    for n, text in enumerate(texts, 1):
        thread_id, final, usage = run_turn(codex, text, thread_id, schema and n == 1, mode)
        print(f"turn {n}: {final}", flush=True)
        if "--print-usage" in args and usage is not None:
            tokens = usage.get("input_tokens", 0) + usage.get("output_tokens", 0)
            print(f"turn {n} tokens: {tokens}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
