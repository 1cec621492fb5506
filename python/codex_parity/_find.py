"""Finding the `codex-parity` binary that this package installed.

The wheel puts the binary itself (not a wrapper) in the environment's scripts directory,
next to `python`. It is looked for in this order:

1. `$CODEX_PARITY_BIN`, when set (it must name an executable file);
2. the scripts directory of this interpreter's environment (a venv that is not activated
   included), then that of the user scheme (`pip install --user`);
3. `codex-parity` on `PATH`.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig

#: The environment variable that names the binary to use instead of the installed one.
BIN_ENV = "CODEX_PARITY_BIN"

_NAME = "codex-parity" + (".exe" if sys.platform == "win32" else "")


def _scripts_dirs() -> list[str]:
    dirs = []
    for scheme in (None, f"{os.name}_user"):
        try:
            path = (
                sysconfig.get_path("scripts")
                if scheme is None
                else sysconfig.get_path("scripts", scheme)
            )
        except KeyError:
            continue
        if path and path not in dirs:
            dirs.append(path)
    return dirs


def find_codex_parity_bin() -> str:
    """Returns the path of the `codex-parity` binary to run.

    Raises `FileNotFoundError` naming every place looked at when there is none, and when
    `$CODEX_PARITY_BIN` names something that is not an executable file.
    """
    override = os.environ.get(BIN_ENV)
    if override:
        if os.path.isfile(override) and os.access(override, os.X_OK):
            return override
        raise FileNotFoundError(
            f"${BIN_ENV} is {override!r}, which is not an executable file: unset it to use "
            "the installed codex-parity, or point it at one"
        )
    looked = []
    for directory in _scripts_dirs():
        candidate = os.path.join(directory, _NAME)
        looked.append(candidate)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    on_path = shutil.which(_NAME)
    if on_path:
        return on_path
    raise FileNotFoundError(
        "no codex-parity binary: looked at " + ", ".join(looked) + " and on PATH. "
        "Install the wheel (`pip install codex-parity`) into this environment, or set "
        f"${BIN_ENV} to a codex-parity binary"
    )
