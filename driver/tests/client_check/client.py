#!/usr/bin/env python3
"""A stand-in integrator client of `codex app-server`, for the client-check tests.

It starts `codex app-server` itself, as an integrator's program would, and speaks its
JSON-RPC over stdio: one JSON object per line, without a "jsonrpc" field. Codex is the
program named by the environment variable CODEX_PARITY_CODEX, else `codex` on PATH.

The flow is fixed: `initialize` (id 1), the `initialized` notification, `thread/start`
(id 2), `turn/start` (id 3) with the text "hello", then messages are read until the
`turn/completed` of that thread. Server requests are answered on the way: approvals
(`*/requestApproval`) are accepted, `item/tool/call` gets "ok", anything else gets a
-32601 error. The agent's text (the completed `agentMessage` item, else its deltas) is
printed as `final: <text>`. Then codex's stdin is closed and codex gets 5 s to exit
before it is killed (1 s when the session fails before the turn completes).

The first argument is the mode, which decides how picky the client is:

    situation                                   strict      tolerant
    turn completed                              0           0
    turn interrupted or failed                  1           1
    bad usage, or codex cannot be started       2           2
    unknown notification method                 3           ignored
    unknown turn status                         4           warning, 0
    codex's stdout ends before turn/completed   5           5
    error response to a request                 6           6 (-32001: resent, 5 times at most)
    no message for 5 s                          waits on    7
    the same item id completed twice            8           ignored
    a line that is not a JSON object message    9           ignored

Every non-zero exit prints a one-line reason on stderr. Strict has no timeout of its
own on purpose: whoever runs it must kill it. Blank lines from codex are skipped in both
modes. Python 3.11, standard library only.

Options after the mode, for the checks of client-check's own verdicts:

    --print-deltas   print the agent's deltas concatenated as they came (blindly: a
                     doubled delta is printed twice), not the completed item's text
    --kill-at-end    kill codex (SIGKILL) as soon as the turn completes, then exit
"""

import json
import os
import queue
import subprocess
import sys
import threading
import time

MODES = ("strict", "tolerant")

# The longest tolerant waits for one message, in seconds.
TOLERANT_WAIT_S = 5.0
# How long codex gets to exit after its stdin is closed at the end of the turn, in seconds.
EXIT_S = 5.0
# The same when the session fails before the turn completes, in seconds.
FAIL_EXIT_S = 1.0
# The pause before resending a request refused with "server overloaded", in seconds.
RETRY_PAUSE_S = 0.2
# How many times tolerant resends a request refused with "server overloaded".
RETRY_MAX = 5
# The JSON-RPC error code of "server overloaded".
OVERLOADED = -32001

KNOWN_PREFIXES = (
    "thread/",
    "turn/",
    "item/",
    "account/",
    "mcpServer/",
    "model/",
    "configWarning",
    "deprecationNotice",
    "skills/",
    "app/",
    "fs/",
    "windows/",
    "serverRequest/",
    "rawResponseItem/",
    "hook/",
    "command/",
    "fuzzyFileSearch/",
    "codex/event/",
    "error",
    "sessionConfigured",
    "remoteControl/",
    "externalAgentConfig/",
    "warning",
    "guardianWarning",
)

KNOWN_STATUSES = ("completed", "interrupted", "failed", "inProgress")


class Exit(Exception):
    """Ends the session with an exit code; a non-zero one comes with a reason for stderr."""

    def __init__(self, code, reason=""):
        super().__init__(reason)
        self.code = code
        self.reason = reason


def is_known(method):
    """Whether strict mode knows the notification method."""
    if "codexParity" in method:
        return False
    return method.startswith(KNOWN_PREFIXES)


def as_dict(value):
    """The value if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


class Client:
    """One session with one app-server."""

    def __init__(self, mode, options=()):
        self.strict = mode == "strict"
        self.print_deltas = "--print-deltas" in options
        self.kill_at_end = "--kill-at-end" in options
        self.next_id = 1
        self.proc = None
        self.lines = queue.Queue()
        self.thread_id = None
        # Set once `turn/start` has been sent: only then does `turn/completed` count.
        self.turn_sent = False
        # The status of the awaited turn once its `turn/completed` has arrived.
        self.turn_status = None
        self.turn_done = False
        # Item ids in the order their first delta came, and their deltas.
        self.delta_order = []
        self.deltas = {}
        self.completed_ids = set()
        self.completed_text = None

    # --- the process -----------------------------------------------------------------

    def start(self):
        codex = os.environ.get("CODEX_PARITY_CODEX") or "codex"
        try:
            self.proc = subprocess.Popen(
                [codex, "app-server"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                encoding="utf-8",
                errors="replace",
                bufsize=1,
            )
        except OSError as e:
            raise Exit(2, f"cannot start {codex} app-server: {e}")
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for line in self.proc.stdout:
                self.lines.put(line)
        except (OSError, ValueError):
            pass
        self.lines.put(None)

    def stop(self, grace):
        """Closes codex's stdin, waits up to `grace` seconds for it to exit, else kills it."""
        if self.proc is None:
            return
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def send(self, message):
        try:
            self.proc.stdin.write(json.dumps(message) + "\n")
            self.proc.stdin.flush()
        except (OSError, ValueError):
            # Codex is gone; the end of its stdout will tell.
            pass

    # --- reading -----------------------------------------------------------------------

    def next_message(self):
        """The next JSON object from codex; exits on EOF, timeout or (strict) bad lines."""
        while True:
            if self.strict:
                line = self.lines.get()
            else:
                try:
                    line = self.lines.get(timeout=TOLERANT_WAIT_S)
                except queue.Empty:
                    raise Exit(7, f"no message from the app-server in {TOLERANT_WAIT_S:g} s")
            if line is None:
                raise Exit(5, "the app-server's stdout ended before turn/completed")
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                message = None
            if isinstance(message, dict):
                return message
            if self.strict:
                raise Exit(9, f"malformed line from the app-server: {line.strip()[:200]}")

    def handle(self, message):
        """Handles a server request or notification; returns the id if it is a response."""
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message:
                self.answer(message["id"], method)
            else:
                self.notification(method, as_dict(message.get("params")))
            return None
        if "id" in message and ("result" in message or "error" in message):
            return message["id"]
        if self.strict:
            raise Exit(9, f"malformed message from the app-server: {json.dumps(message)[:200]}")
        return None

    def answer(self, request_id, method):
        if method.endswith("/requestApproval"):
            self.send({"id": request_id, "result": {"decision": "accept"}})
        elif method == "item/tool/call":
            self.send(
                {
                    "id": request_id,
                    "result": {
                        "contentItems": [{"type": "inputText", "text": "ok"}],
                        "success": True,
                    },
                }
            )
        else:
            self.send(
                {
                    "id": request_id,
                    "error": {"code": -32601, "message": "not supported by this client"},
                }
            )

    def notification(self, method, params):
        if self.strict and not is_known(method):
            raise Exit(3, f"unknown notification {method}")
        if method == "item/agentMessage/delta":
            item_id = params.get("itemId")
            delta = params.get("delta")
            if isinstance(delta, str):
                if item_id not in self.deltas:
                    self.delta_order.append(item_id)
                    self.deltas[item_id] = []
                self.deltas[item_id].append(delta)
        elif method == "item/completed":
            item = as_dict(params.get("item"))
            item_id = item.get("id")
            if item_id is not None:
                if item_id in self.completed_ids:
                    if self.strict:
                        raise Exit(8, f"item ID completed twice: {item_id}")
                    return
                self.completed_ids.add(item_id)
            if item.get("type") == "agentMessage" and isinstance(item.get("text"), str):
                self.completed_text = item["text"]
        elif method == "turn/completed":
            if not self.turn_sent:
                return
            if "threadId" in params and params["threadId"] != self.thread_id:
                return
            status = as_dict(params.get("turn")).get("status")
            if self.strict and status not in KNOWN_STATUSES:
                raise Exit(4, f"unknown turn status {status!r}")
            self.turn_status = status
            self.turn_done = True

    # --- requests ----------------------------------------------------------------------

    def request(self, method, params):
        """Sends a request and returns its result, handling everything else meanwhile.

        Returns None if the awaited turn completes before the response arrives."""
        retries = 0
        while True:
            request_id = self.next_id
            self.next_id += 1
            self.send({"id": request_id, "method": method, "params": params})
            if method == "turn/start":
                self.turn_sent = True
            response = self.await_response(request_id)
            if response is None:
                return None
            error = response.get("error")
            if error is None:
                return response.get("result")
            error = as_dict(error)
            code = error.get("code")
            text = error.get("message")
            if not self.strict and code == OVERLOADED and retries < RETRY_MAX:
                retries += 1
                time.sleep(RETRY_PAUSE_S)
                continue
            raise Exit(6, f"error response to {method} (id {request_id}): code {code}: {text}")

    def await_response(self, request_id):
        while not self.turn_done:
            message = self.next_message()
            if self.handle(message) == request_id:
                return message
        return None

    # --- the session -------------------------------------------------------------------

    def run(self):
        self.start()
        self.request(
            "initialize",
            {"clientInfo": {"name": "client-check-test", "version": "1.0.0"}},
        )
        self.send({"method": "initialized"})
        result = as_dict(self.request("thread/start", {}))
        thread_id = as_dict(result.get("thread")).get("id")
        if thread_id is None:
            raise Exit(9, "the thread/start result has no thread.id")
        self.thread_id = thread_id
        self.request(
            "turn/start",
            {"threadId": thread_id, "input": [{"type": "text", "text": "hello"}]},
        )
        while not self.turn_done:
            self.handle(self.next_message())
        return self.finish()

    def final_text(self):
        if self.print_deltas:
            return "".join(d for item in self.delta_order for d in self.deltas[item])
        if self.completed_text is not None:
            return self.completed_text
        if self.delta_order:
            return "".join(self.deltas[self.delta_order[-1]])
        return ""

    def finish(self):
        if self.kill_at_end:
            self.proc.kill()
            self.proc.wait()
        print(f"final: {self.final_text()}", flush=True)
        self.stop(EXIT_S)
        status = self.turn_status
        if status == "completed":
            return 0
        if status in ("interrupted", "failed"):
            return 1
        if status not in KNOWN_STATUSES:
            print(f"warning: unknown turn status {status!r}", file=sys.stderr, flush=True)
            return 0
        # A known status that is not final ("inProgress") on turn/completed.
        print(f"warning: turn completed with status {status!r}", file=sys.stderr, flush=True)
        return 0


def main():
    options = ("--print-deltas", "--kill-at-end")
    if len(sys.argv) < 2 or sys.argv[1] not in MODES or any(a not in options for a in sys.argv[2:]):
        print(f"usage: {sys.argv[0]} strict|tolerant [--print-deltas] [--kill-at-end]", file=sys.stderr)
        return 2
    client = Client(sys.argv[1], sys.argv[2:])
    try:
        return client.run()
    except Exit as e:
        print(e.reason, file=sys.stderr, flush=True)
        client.stop(FAIL_EXIT_S)
        return e.code


if __name__ == "__main__":
    sys.exit(main())
