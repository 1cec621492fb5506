"""codex-parity from Python: the `codex-parity` binary this wheel installs, the sidecar (a
mock OpenAI Responses API) as an object, `client-check` with its verdict as rows, and a
pytest plugin (`codex_parity.pytest_plugin`) with fixtures for both.

The binary does the work; this package finds it (`find_codex_parity_bin`) and speaks its
protocols. It imports nothing outside the standard library.
"""

from __future__ import annotations

from . import responses
from ._find import BIN_ENV, find_codex_parity_bin
from .client_check import ClientCheckResult, ClientCheckUsageError, Row, run_client_check
from .install import install_codex
from .sidecar import (
    CapturedRequest,
    Sidecar,
    SidecarError,
    SidecarResult,
    SidecarStatus,
)

try:
    from importlib.metadata import PackageNotFoundError, version

    __version__ = version("codex-parity")
except PackageNotFoundError:  # pragma: no cover - a source checkout
    __version__ = "0+unknown"

__all__ = [
    "BIN_ENV",
    "CapturedRequest",
    "ClientCheckResult",
    "ClientCheckUsageError",
    "Row",
    "Sidecar",
    "SidecarError",
    "SidecarResult",
    "SidecarStatus",
    "find_codex_parity_bin",
    "install_codex",
    "responses",
    "run_client_check",
]
