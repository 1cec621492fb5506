"""`codex-parity client-check` from Python: your program served a recorded session and its
mutations by a mock app-server (docs/client-check.md), the verdict read back as rows.

    result = run_client_check(["python3", "my_client.py"],
                              source="tests/codex/session.toml",
                              mutations="none,extra-field", must_survive="all",
                              report_dir=tmp_path / "cc")
    assert result.passed, result.table

Standard library only.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ._find import find_codex_parity_bin


class ClientCheckUsageError(ValueError):
    """client-check refused its input (exit status 2): the message says what to give."""


@dataclass(frozen=True)
class Row:
    """One mutation's run: what it expects of your program, and how it ended."""

    mutation: str
    expect: str
    must_survive: bool
    result: str
    passes: bool
    exit: int | None
    timed_out: bool
    seconds: float
    launches: int
    reasons: list[str]
    notes: list[str]

    @classmethod
    def from_json(cls, r: dict[str, Any]) -> "Row":
        """Reads one row of `client-check.json`."""
        return cls(
            mutation=r["mutation"],
            expect=r["expect"],
            must_survive=r["must_survive"],
            result=r["result"],
            passes=bool(r.get("passes", r["result"] == "passed")),
            exit=r.get("exit"),
            timed_out=r.get("timed_out", False),
            seconds=r.get("seconds", 0.0),
            launches=r.get("launches", 0),
            reasons=list(r.get("reasons") or []),
            notes=list(r.get("notes") or []),
        )

    @property
    def passed(self) -> bool:
        """Whether your program did what the mutation expects (a row that stopped early
        passes unless the whole session was asked for)."""
        return self.passes

    @property
    def applicable(self) -> bool:
        """False when the session has nothing this mutation changes (never a pass)."""
        return self.result != "not_applicable"

    def describe(self) -> str:
        """The row in a few lines: result, exit status, reasons and notes."""
        if self.timed_out:
            exit_word = "timeout"
        elif self.exit is None:
            exit_word = "signal" if self.applicable else "-"
        else:
            exit_word = str(self.exit)
        lines = [f"{self.mutation} (expects {self.expect}): {self.result}, exit {exit_word}"]
        lines += [f"  {r}" for r in self.reasons]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


@dataclass(frozen=True)
class ClientCheckResult:
    """A whole check: its exit status (0 pass, 1 a must-survive mutation did not pass),
    the rows, the table client-check printed and where its report is."""

    exit_code: int
    passed: bool
    rows: list[Row]
    source: str
    codex: str
    table: str
    stderr: str
    report_dir: Path

    @property
    def junit_path(self) -> Path:
        """The JUnit file of the check (one test case per mutation)."""
        return self.report_dir / "junit.xml"


def _csv(value: str | Sequence[str] | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return ",".join(value)


def run_client_check(
    command: Sequence[str | os.PathLike[str]],
    *,
    source: str | os.PathLike[str],
    report_dir: str | os.PathLike[str],
    mutations: str | Sequence[str] | None = None,
    must_survive: str | Sequence[str] | None = None,
    timeout_secs: int | None = None,
    codex_version: str | None = None,
    codex_bin: str | os.PathLike[str] | None = None,
    bin: str | os.PathLike[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    env: dict[str, str] | None = None,
) -> ClientCheckResult:
    """Runs `codex-parity client-check --from SOURCE … --report REPORT_DIR -- COMMAND`.

    `mutations` and `must_survive` are lists or comma-separated strings, as on the command
    line (their defaults are client-check's). Returns the verdict; raises
    `ClientCheckUsageError` when client-check refuses its input (exit 2) and
    `RuntimeError` on any other unexpected end.
    """
    if not command:
        raise ClientCheckUsageError("client-check needs the COMMAND that runs your program")
    report = Path(report_dir)
    argv = [
        os.fspath(bin) if bin else find_codex_parity_bin(),
        "client-check",
        "--from",
        os.fspath(source),
        "--report",
        str(report),
    ]
    for flag, value in (
        ("--mutations", _csv(mutations)),
        ("--must-survive", _csv(must_survive)),
        ("--timeout-secs", None if timeout_secs is None else str(timeout_secs)),
        ("--codex-version", codex_version),
        ("--codex-bin", None if codex_bin is None else os.fspath(codex_bin)),
    ):
        if value is not None:
            argv += [flag, value]
    argv += ["--", *(os.fspath(c) for c in command)]
    done = subprocess.run(
        argv,
        cwd=cwd,
        env=None if env is None else {**os.environ, **env},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
    )
    if done.returncode == 2:
        raise ClientCheckUsageError(done.stderr.strip() or done.stdout.strip())
    verdict_file = report / "client-check.json"
    if done.returncode not in (0, 1) or not verdict_file.is_file():
        raise RuntimeError(
            f"client-check ended with status {done.returncode} and no {verdict_file}:\n"
            f"{done.stderr.strip()}"
        )
    verdict = json.loads(verdict_file.read_text())
    return ClientCheckResult(
        exit_code=done.returncode,
        passed=bool(verdict["passed"]),
        rows=[Row.from_json(r) for r in verdict["rows"]],
        source=verdict.get("source", os.fspath(source)),
        codex=verdict.get("codex", ""),
        table=done.stdout,
        stderr=done.stderr,
        report_dir=report,
    )
