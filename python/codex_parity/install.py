"""Real codex binaries for your tests: `codex-parity install`, from Python."""

from __future__ import annotations

import os
import subprocess

from ._find import find_codex_parity_bin


def install_codex(version: str | None = None, *, bin: str | os.PathLike[str] | None = None) -> str:
    """Installs codex `version` (default: the version this codex-parity pins; `latest`:
    npm's newest) into codex-parity's cache, unless it is there, and returns the path of
    its binary. Needs `npm` on PATH the first time; `CODEX_PARITY_CACHE` moves the cache.
    Raises `RuntimeError` with codex-parity's message when the install fails."""
    argv = [os.fspath(bin) if bin else find_codex_parity_bin(), "install"]
    if version:
        argv.append(version)
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    if done.returncode != 0 or not lines:
        raise RuntimeError(
            f"`{' '.join(argv)}` failed (status {done.returncode}):\n{done.stderr.strip()}"
        )
    # One line per binary: "codex-VERSION PATH".
    return lines[-1].split(" ", 1)[1]
