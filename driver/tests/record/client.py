#!/usr/bin/env python3
"""A stand-in integrator program for the tests of `codex-parity record`.

It launches `codex app-server` itself, as an integrator's program would, and speaks its
JSON-RPC over stdio: one JSON object per line. Codex is the program named by the environment
variable CODEX_PARITY_CODEX, else `codex` on PATH. The one argument is the mode:

- plain: one turn, "say hello".
- tool: a thread with the dynamic tool `lookup`; its `item/tool/call` gets "x is 42".
- approval: an `untrusted`, workspace-write thread; command approvals are accepted.
- steer: `turn/steer` 1 s after `turn/started`; the steer must succeed.
- interrupt: `turn/interrupt` 1 s after `turn/started`; the interrupt must succeed.
- exit-at-once: exits 0 at once, without starting codex.
- fail: the plain flow, then exit status 3.
- no-turn: starts codex and a thread, then ends the session without a turn.
- secrets: the plain flow, its turn's text taken from the environment variable
  RECORD_TEST_PROMPT (a test plants secrets there and in the ignored extra arguments).
- hang: starts codex and a thread, then waits 10 minutes (a test kills `record` meanwhile).
- strict: the plain flow, but the client refuses a `thread/start` result with a top-level
  field it does not know (a strict model, as typed SDKs have): the fields it knows are
  CLIENT_KNOWN_FIELDS (comma-separated), by default those codex 0.131.0 sends. Exits 4
  naming the field.

Arguments after the mode are ignored.

Every mode but exit-at-once and no-turn prints `turn <status>` when its turn completes. Any failure exits
non-zero with a message on stderr. No wait is longer than 30 s, and codex is killed on exit.
This is the Python twin of `driver/examples/record_client.rs`: same modes, same behaviour
(secrets and hang are this client's only).
Python 3.11, standard library only.
"""

import json
import os
import queue
import subprocess
import sys
import threading
import time

# The longest any one wait may take, in seconds.
WAIT_S = 30.0
# How long codex gets to exit after its stdin is closed, in seconds.
EXIT_S = 5.0
# The pause between `turn/started` and the steer or interrupt, in seconds.
PAUSE_S = 1.0

MODES = (
    "plain",
    "tool",
    "approval",
    "steer",
    "interrupt",
    "exit-at-once",
    "fail",
    "no-turn",
    "secrets",
    "hang",
    "strict",
)

# The top-level fields of codex 0.131.0's thread/start result.
KNOWN_0_131 = (
    "activePermissionProfile,approvalPolicy,approvalsReviewer,cwd,instructionSources,model,"
    "modelProvider,reasoningEffort,runtimeWorkspaceRoots,sandbox,serviceTier,thread"
)

LOOKUP_TOOL = {
    "name": "lookup",
    "description": "Look a key up.",
    "inputSchema": {"type": "object", "properties": {"key": {"type": "string"}}},
}

TURN_TEXT = {
    "plain": "say hello",
    "fail": "say hello",
    "tool": "look up the key x",
    "approval": "run the command",
    "steer": "write a fruit list",
    "interrupt": "take your time",
    "strict": "say hello",
}


class Failure(Exception):
    """A failure of the session: its message goes to stderr."""


class Codex:
    """A running `codex app-server` and the state of the session with it."""

    def __init__(self, mode):
        program = os.environ.get("CODEX_PARITY_CODEX") or "codex"
        self.mode = mode
        try:
            self.proc = subprocess.Popen(
                [program, "app-server"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=None,
            )
        except OSError as err:
            raise Failure(f"cannot start {program} app-server: {err}") from err
        self.inbox = queue.Queue()
        self.next_id = 1
        # Turn ids whose `turn/started` arrived, and the status of each completed turn.
        self.started = set()
        self.completed = {}
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        """Puts each line of codex's stdout in the inbox, then None at the end."""
        for line in self.proc.stdout:
            self.inbox.put(line)
        self.inbox.put(None)

    def send(self, message):
        """Writes one message as a line on codex's stdin."""
        line = json.dumps(message, separators=(",", ":")) + "\n"
        try:
            self.proc.stdin.write(line.encode())
            self.proc.stdin.flush()
        except OSError as err:
            raise Failure(f"cannot write to codex: {err}") from err

    def _next(self, deadline, waiting_for):
        """The next message from codex, handled (server requests answered, turn events
        noted); None once the deadline passed. The end of codex's output is a Failure."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                line = self.inbox.get(timeout=left)
            except queue.Empty:
                return None
            if line is None:
                raise Failure(f"codex closed its stdout while the client waited for {waiting_for}")
            try:
                message = json.loads(line)
            except ValueError:
                message = None
            if not isinstance(message, dict):
                note = f"record-test-client: not a JSON object from codex: {line!r}"
                print(note, file=sys.stderr)
                continue
            self._handle(message)
            return message

    def receive(self, deadline, waiting_for):
        """The next message from codex, handled; a Failure at the deadline."""
        message = self._next(deadline, waiting_for)
        if message is None:
            raise Failure(f"timed out after {WAIT_S:.0f} s waiting for {waiting_for}")
        return message

    def _handle(self, message):
        """Answers a server request; notes `turn/started` and `turn/completed`."""
        method = message.get("method")
        params = message.get("params")
        if not isinstance(params, dict):
            params = {}
        if "id" in message and method is not None:
            self.send(self._answer(message["id"], method))
            return
        turn = params.get("turn")
        if not isinstance(turn, dict):
            return
        if method == "turn/started":
            self.started.add(turn.get("id"))
        elif method == "turn/completed":
            self.completed[turn.get("id")] = turn.get("status")

    def _answer(self, request_id, method):
        """The reply to the server request `method`, as the mode has it."""
        if self.mode == "tool" and method == "item/tool/call":
            items = [{"type": "inputText", "text": "x is 42"}]
            return {"id": request_id, "result": {"success": True, "contentItems": items}}
        if self.mode == "approval" and method == "item/commandExecution/requestApproval":
            return {"id": request_id, "result": {"decision": "accept"}}
        if self.mode == "approval" and method == "execCommandApproval":
            return {"id": request_id, "result": {"decision": "approved"}}
        error = {"code": -32601, "message": "not handled by the test client"}
        return {"id": request_id, "error": error}

    def request(self, method, params=None):
        """Sends a request and returns its result; an error reply is a Failure."""
        request_id = self.next_id
        self.next_id += 1
        message = {"id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        deadline = time.monotonic() + WAIT_S
        while True:
            reply = self.receive(deadline, f"the reply to {method}")
            if reply.get("id") != request_id or "method" in reply:
                continue
            if "error" in reply:
                raise Failure(f"{method} failed: {json.dumps(reply['error'])}")
            if "result" not in reply:
                raise Failure(f"{method}: a reply with neither result nor error: {reply}")
            return reply["result"]

    def wait_until(self, done, waiting_for):
        """Handles messages until `done()` holds, for at most WAIT_S."""
        deadline = time.monotonic() + WAIT_S
        while not done():
            self.receive(deadline, waiting_for)

    def pause(self, seconds, before):
        """Handles the messages that arrive in the next `seconds` (answering server requests)."""
        deadline = time.monotonic() + seconds
        while self._next(deadline, f"the end of the pause before {before}") is not None:
            pass

    def close(self):
        """Closes codex's stdin and waits for it to exit, killing it after EXIT_S."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=EXIT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def kill(self):
        """Kills codex if it still runs."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def thread_params(mode):
    """The `thread/start` params of the mode."""
    params = {"cwd": os.getcwd()}
    if mode == "tool":
        params["dynamicTools"] = [LOOKUP_TOOL]
    elif mode == "approval":
        params["approvalPolicy"] = "untrusted"
        params["sandbox"] = "workspace-write"
    return params


def text_input(text):
    """A one-text user input."""
    return [{"type": "text", "text": text}]


def run(codex, mode):
    """The session of the mode, up to its turn's completion."""
    codex.request(
        "initialize",
        {
            "clientInfo": {"name": "record-test-client", "version": "1.0.0"},
            "capabilities": {"experimentalApi": True},
        },
    )
    codex.send({"method": "initialized"})
    started = codex.request("thread/start", thread_params(mode))
    thread_id = (started.get("thread") or {}).get("id")
    if not isinstance(thread_id, str):
        raise Failure(f"thread/start: no result.thread.id in {json.dumps(started)}")
    if mode == "strict":
        known = set(os.environ.get("CLIENT_KNOWN_FIELDS", KNOWN_0_131).split(","))
        unknown = sorted(set(started) - known)
        if unknown:
            raise Failure(f"thread/start: unknown field {unknown[0]} in the result")
    if mode == "no-turn":
        return
    if mode == "hang":
        time.sleep(600)
        return
    text = os.environ.get("RECORD_TEST_PROMPT", "") if mode == "secrets" else TURN_TEXT[mode]
    turn_params = {"threadId": thread_id, "input": text_input(text)}
    turn = codex.request("turn/start", turn_params)
    turn_id = (turn.get("turn") or {}).get("id")
    if not isinstance(turn_id, str):
        raise Failure(f"turn/start: no result.turn.id in {json.dumps(turn)}")
    if mode in ("steer", "interrupt"):
        codex.wait_until(
            lambda: turn_id in codex.started or turn_id in codex.completed,
            "turn/started",
        )
        if turn_id in codex.completed:
            raise Failure(f"the turn completed before the {mode} could be sent")
        codex.pause(PAUSE_S, f"turn/{mode}")
        if mode == "steer":
            codex.request(
                "turn/steer",
                {
                    "threadId": thread_id,
                    "input": text_input("also mention bananas"),
                    "expectedTurnId": turn_id,
                },
            )
        else:
            codex.request("turn/interrupt", {"threadId": thread_id, "turnId": turn_id})
    codex.wait_until(lambda: turn_id in codex.completed, "turn/completed")
    print(f"turn {codex.completed[turn_id]}", flush=True)


def main():
    """Runs the mode named by the one argument; returns the exit status."""
    if len(sys.argv) < 2 or sys.argv[1] not in MODES:
        print(f"usage: client.py MODE [IGNORED...] (MODE: one of {', '.join(MODES)})", file=sys.stderr)
        return 1
    mode = sys.argv[1]
    if mode == "exit-at-once":
        return 0
    codex = None
    try:
        codex = Codex(mode)
        run(codex, mode)
        codex.close()
    except Failure as err:
        print(f"record-test-client ({mode}): {err}", file=sys.stderr)
        return 4 if mode == "strict" else 1
    finally:
        if codex is not None:
            codex.kill()
    if mode == "fail":
        print("record-test-client (fail): failing on purpose with status 3", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
