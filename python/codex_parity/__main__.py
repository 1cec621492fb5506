"""`python -m codex_parity ARGS…` runs the installed `codex-parity` binary with ARGS."""

from __future__ import annotations

import os
import subprocess
import sys

from ._find import find_codex_parity_bin


def main() -> int:
    """Runs the binary with this process's arguments; returns its exit status."""
    binary = find_codex_parity_bin()
    argv = [binary, *sys.argv[1:]]
    if sys.platform != "win32":
        os.execv(binary, argv)
    return subprocess.run(argv).returncode


if __name__ == "__main__":
    sys.exit(main())
