"""The sidecar, a mock OpenAI Responses API, as a Python object.

`Sidecar` starts `codex-parity sidecar` and speaks its JSONL control protocol
(docs/sidecar-protocol.md): script model responses, read the requests codex made, and at the
end learn whether anything was left over (a response never served, a request nothing
answered, a gate never released).

    with Sidecar() as sidecar:
        sidecar.enqueue(responses.assistant_reply("Hello!"))
        env = sidecar.write_codex_home(tmp_path / "codex-home")
        ...  # run codex (or the program that starts it) with env
        [request] = sidecar.requests(min=1, timeout=10)
    assert sidecar.result.exit_code == 0

Standard library only: the pytest plugin imports this module in every pytest run of the
environment.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ._find import find_codex_parity_bin

#: The API key codex sends the mock (the provider of `write_codex_home` reads it from
#: `CODEX_PARITY_MOCK_API_KEY`). It is not a secret: the sidecar accepts any key.
MOCK_API_KEY = "sk-codex-parity-mock"

#: The model `write_codex_home` configures.
MOCK_MODEL = "mock-model"

#: The exit status of a sidecar that shut down with leftovers.
EXIT_LEFTOVERS = 3

_LEFTOVER_MARKS = ("never served:", "unscripted request:", "gate never released:")


class SidecarError(RuntimeError):
    """The sidecar answered a command with an error, or is not running."""


@dataclass(frozen=True)
class CapturedRequest:
    """One request the sidecar captured (docs/sidecar-protocol.md, "Capture fields")."""

    index: int
    method: str
    path: str
    query: str | None
    headers: dict[str, str]
    body: Any
    outcome: str
    raw: dict[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls, r: dict[str, Any]) -> "CapturedRequest":
        """Reads one captured request of a `requests` reply."""
        return cls(
            index=r.get("index", 0),
            method=r.get("method", "POST"),
            path=r["path"],
            query=r.get("query"),
            headers=dict(r.get("headers") or {}),
            body=r.get("body"),
            outcome=r.get("outcome", "scripted"),
            raw=r,
        )

    @property
    def unscripted(self) -> bool:
        """Whether no scripted response was left for it (it got an HTTP 500)."""
        return self.outcome == "unscripted"

    def input_texts(self) -> list[str]:
        """The texts of the `input` items of a model request's body, in order: what the
        model was sent (user and developer messages, tool outputs given as text)."""
        texts: list[str] = []
        body = self.body if isinstance(self.body, dict) else {}
        for item in body.get("input") or []:
            if not isinstance(item, dict):
                continue
            content = item.get("content")
            if isinstance(content, str):
                texts.append(content)
            elif isinstance(content, list):
                texts += [c["text"] for c in content if isinstance(c, dict) and "text" in c]
            if isinstance(item.get("output"), str):
                texts.append(item["output"])
        return texts


@dataclass(frozen=True)
class SidecarStatus:
    """The reply to `status`: responses queued, served, requests unscripted and captured."""

    pending: int
    served: int
    unscripted: int
    captured: int


@dataclass(frozen=True)
class SidecarResult:
    """How a sidecar ended: its exit status (0, or 3 with leftovers), the counts of its
    shutdown reply, and what it wrote on stderr."""

    exit_code: int
    pending: int
    unscripted: int
    stderr: str

    @property
    def leftovers(self) -> list[str]:
        """The leftovers the sidecar named on stderr, one per line."""
        return [
            line.split(": ", 1)[1]
            for line in self.stderr.splitlines()
            if any(mark in line for mark in _LEFTOVER_MARKS)
        ]


class Sidecar:
    """A running `codex-parity sidecar`, steered over its stdin and stdout.

    `config` is a config file (`{"responses": [...]}`), `responses` scripted responses to
    queue at once, `lenient` makes leftovers exit 0, `bin` is the codex-parity binary
    (default: the installed one, see `find_codex_parity_bin`), `timeout` bounds the wait
    for the ready line and for each reply, in seconds.
    """

    def __init__(
        self,
        *,
        config: str | os.PathLike[str] | None = None,
        responses: Iterable[Any] = (),
        lenient: bool = False,
        bin: str | os.PathLike[str] | None = None,
        timeout: float = 30.0,
    ) -> None:
        self._timeout = timeout
        self._lock = threading.Lock()
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._stderr: deque[str] = deque(maxlen=2000)
        self.result: SidecarResult | None = None
        argv = [os.fspath(bin) if bin else find_codex_parity_bin(), "sidecar"]
        if config is not None:
            argv += ["--config", os.fspath(config)]
        if lenient:
            argv.append("--lenient")
        self._proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self._threads = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for t in self._threads:
            t.start()
        try:
            ready = self._next_line(timeout, "its ready line")
            if ready.get("type") != "ready":
                raise SidecarError(f"the sidecar's first line is not its ready line: {ready}")
            self.base_url: str = ready["base_url"]
            self.server_url: str = ready["server_url"]
            self.protocol: int = ready.get("protocol", 1)
            self.pid: int = self._proc.pid
            responses = list(responses)
            if responses:
                self.enqueue(*responses)
        except BaseException:
            self._kill()
            raise

    # -- plumbing -------------------------------------------------------------------------

    def _read_stdout(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            if line.strip():
                self._lines.put(line)
        self._lines.put(None)

    def _read_stderr(self) -> None:
        assert self._proc.stderr is not None
        for line in self._proc.stderr:
            self._stderr.append(line.decode("utf-8", "replace").rstrip("\n"))

    def _next_line(self, timeout: float, what: str) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise SidecarError(
                f"the sidecar sent no {what} within {timeout:g} s; stderr:\n{self.stderr()}"
            ) from None
        if line is None:
            self._lines.put(None)
            code = self._proc.wait()
            raise SidecarError(
                f"the sidecar exited (status {code}) before {what}; stderr:\n{self.stderr()}"
            )
        return json.loads(line)

    def _kill(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        for stream in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
            if stream is not None:
                stream.close()

    def stderr(self) -> str:
        """What the sidecar wrote on stderr so far (its last 2000 lines)."""
        return "\n".join(self._stderr)

    def command(self, op: str, wait: float = 0.0, **fields: Any) -> dict[str, Any]:
        """Sends one command and returns its reply; an `error` reply raises `SidecarError`.
        `wait` is how long the command itself may take, in seconds (added to the timeout)."""
        if self.result is not None:
            raise SidecarError(f"the sidecar is closed; cannot send {op!r}")
        message = {"op": op, **fields}
        with self._lock:
            assert self._proc.stdin is not None
            try:
                self._proc.stdin.write(json.dumps(message).encode() + b"\n")
                self._proc.stdin.flush()
            except BrokenPipeError:
                raise SidecarError(
                    f"the sidecar is gone (sending {op!r}); stderr:\n{self.stderr()}"
                ) from None
            reply = self._next_line(self._timeout + wait, f"an answer to {op!r}")
        if reply.get("type") == "error":
            raise SidecarError(f"{op}: {reply.get('message')}")
        return reply

    # -- the protocol ---------------------------------------------------------------------

    def enqueue(self, *responses: Any) -> int:
        """Queues scripted responses (lists of events, or dicts: docs/sidecar-protocol.md);
        all or nothing. Returns how many are queued now."""
        return self.command("enqueue", responses=list(responses))["pending"]

    def requests(
        self,
        min: int = 0,
        timeout: float = 0.0,
        since: int | None = None,
        all: bool = False,
    ) -> list[CapturedRequest]:
        """The model requests captured so far (`all`: every request), waiting up to
        `timeout` seconds for at least `min` of them. Fewer after the timeout is not an
        error: check the length."""
        fields: dict[str, Any] = {"min": min, "timeout_ms": int(timeout * 1000)}
        if since is not None:
            fields["since"] = since
        if all:
            fields["all"] = True
        reply = self.command("requests", wait=timeout, **fields)
        return [CapturedRequest.from_json(r) for r in reply["requests"]]

    def status(self) -> SidecarStatus:
        """Counts of responses queued and served, and of requests unscripted and captured."""
        r = self.command("status")
        return SidecarStatus(r["pending"], r["served"], r["unscripted"], r["captured"])

    def reset(self) -> None:
        """Empties the script, the capture, connection scripts and gates."""
        self.command("reset")

    def models(self, body: Any) -> None:
        """Sets the body `GET …/models` answers."""
        self.command("models", body=body)

    def wait_gate(self, gate: str, timeout: float) -> int:
        """Waits until a response is held at `gate`; returns how many are held there."""
        return self.command("wait_gate", wait=timeout, gate=gate, timeout_ms=int(timeout * 1000))[
            "held"
        ]

    def release(self, gate: str) -> int:
        """Releases `gate`; returns how many responses it let go."""
        return self.command("release", gate=gate)["held"]

    def websocket(self, warmup: str | None = None, connections: Iterable[Any] | None = None) -> int:
        """Sets the WebSocket warm-up mode and queues connection scripts; returns how many
        connection scripts wait."""
        fields: dict[str, Any] = {}
        if warmup is not None:
            fields["warmup"] = warmup
        if connections is not None:
            fields["connections"] = list(connections)
        return self.command("websocket", **fields)["connections"]

    # -- codex pointed at it --------------------------------------------------------------

    def codex_config(self) -> str:
        """A codex `config.toml` whose model provider is this sidecar: no retries (a
        request nothing answers fails at once), the key from `CODEX_PARITY_MOCK_API_KEY`,
        analytics off."""
        return (
            f'model = "{MOCK_MODEL}"\n'
            'model_provider = "codex-parity"\n'
            "\n[analytics]\nenabled = false\n"
            "\n[model_providers.codex-parity]\n"
            'name = "codex-parity sidecar"\n'
            f"base_url = {json.dumps(self.base_url)}\n"
            'wire_api = "responses"\n'
            'env_key = "CODEX_PARITY_MOCK_API_KEY"\n'
            "request_max_retries = 0\n"
            "stream_max_retries = 0\n"
        )

    def write_codex_home(self, directory: str | os.PathLike[str]) -> dict[str, str]:
        """Makes `directory` a `CODEX_HOME` holding `codex_config()`, and returns the
        environment variables to add for a codex started there (`CODEX_HOME` and the
        mock's key). Start codex with `--disable plugins` too, to keep it offline."""
        home = Path(directory)
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text(self.codex_config())
        return {"CODEX_HOME": str(home), "CODEX_PARITY_MOCK_API_KEY": MOCK_API_KEY}

    # -- the end --------------------------------------------------------------------------

    def close(self, timeout: float = 10.0) -> SidecarResult:
        """Shuts the sidecar down and returns how it ended (also kept in `.result`); a
        second call returns the same. Exit status 3 means leftovers, named on stderr."""
        if self.result is not None:
            return self.result
        pending = unscripted = 0
        try:
            reply = self.command("shutdown")
            pending, unscripted = reply.get("pending", 0), reply.get("unscripted", 0)
        except SidecarError:
            pass
        try:
            code = self._proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            code = self._proc.wait()
        for t in self._threads:
            t.join(timeout=timeout)
        self._kill()
        self.result = SidecarResult(code, pending, unscripted, self.stderr())
        return self.result

    def __enter__(self) -> "Sidecar":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Sidecar(base_url={getattr(self, 'base_url', None)!r}, pid={self._proc.pid})"
