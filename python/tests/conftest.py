"""The plugin's own tests: run with the pytest of an environment where the wheel is
installed (`.ci/packaging` does), so they test the installed package and binary, not the
sources beside them. `pytester` runs the tests that must fail in a pytest of their own."""

import os

pytest_plugins = ["pytester"]

# pytester gives each inner run a HOME of its own: keep codex-parity's cache of codex
# releases where it is (the rule of `codex-parity install`), or each run downloads codex.
if not os.environ.get("CODEX_PARITY_CACHE"):
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = xdg if os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache")
    os.environ["CODEX_PARITY_CACHE"] = os.path.join(base, "codex-parity", "codex")
