"""The pytest plugin of codex-parity (entry point `pytest11`, name `codex_parity`; off with
`-p no:codex_parity`).

Fixtures:

- `codex_sidecar`: a running sidecar (a `codex_parity.Sidecar`: `base_url`, `enqueue`,
  `requests`, `status`, `write_codex_home`, …) for the test; at teardown it is shut down,
  and a response never served, a request nothing answered or a gate never released fails
  the test, named.
- `codex_client_check`: a function that runs `codex-parity client-check` on your program
  and reports each mutation as a result of the test (a subtest where pytest has them).
- `codex_bin`: the path of a real codex (the pinned version, or `--codex-version`),
  installed into codex-parity's cache on first use.
- `codex_parity_bin`: the path of the codex-parity binary used.

Options: `--codex-parity-bin PATH` and `--codex-version V`. The marker
`@pytest.mark.codex_parity(...)` sets a test's options: for the sidecar `lenient`,
`config`, `responses`, `timeout`; for client-check `mutations`, `must_survive`,
`timeout_secs`, `codex_version`.

This module imports only the standard library and pytest: every pytest run in an
environment where the wheel is installed loads it.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterator, Sequence

import pytest

from ._find import find_codex_parity_bin
from .client_check import ClientCheckResult, ClientCheckUsageError, Row, run_client_check
from .install import install_codex
from .sidecar import Sidecar, SidecarError

#: The marker's options, and which fixture reads each.
SIDECAR_OPTIONS = ("lenient", "config", "responses", "timeout")
CLIENT_CHECK_OPTIONS = ("mutations", "must_survive", "timeout_secs", "codex_version")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("codex-parity", "codex-parity (fixtures codex_sidecar, …)")
    group.addoption(
        "--codex-parity-bin",
        metavar="PATH",
        help="the codex-parity binary to run (default: $CODEX_PARITY_BIN, else the one "
        "installed with this package, else codex-parity on PATH)",
    )
    group.addoption(
        "--codex-version",
        metavar="VERSION",
        help="the codex version codex_bin installs and codex_client_check runs scenario "
        "files on (default: the version codex-parity pins; `latest`: npm's newest)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "codex_parity(**options): options of the codex_sidecar fixture (lenient, config, "
        "responses, timeout) and of codex_client_check (mutations, must_survive, "
        "timeout_secs, codex_version)",
    )


def _marker_options(request: pytest.FixtureRequest) -> dict[str, Any]:
    options: dict[str, Any] = {}
    # Closest last: a test's marker wins over its class's and module's.
    for marker in reversed(list(request.node.iter_markers("codex_parity"))):
        if marker.args:
            raise pytest.UsageError(
                f"{request.node.nodeid}: @pytest.mark.codex_parity takes keyword options "
                f"only, got {marker.args!r}"
            )
        options.update(marker.kwargs)
    unknown = sorted(set(options) - set(SIDECAR_OPTIONS) - set(CLIENT_CHECK_OPTIONS))
    if unknown:
        raise pytest.UsageError(
            f"{request.node.nodeid}: unknown @pytest.mark.codex_parity option(s) "
            f"{', '.join(unknown)}; known: {', '.join(SIDECAR_OPTIONS + CLIENT_CHECK_OPTIONS)}"
        )
    return options


@pytest.fixture(scope="session")
def codex_parity_bin(pytestconfig: pytest.Config) -> str:
    """The codex-parity binary: `--codex-parity-bin`, else `$CODEX_PARITY_BIN`, else the
    installed one, else `codex-parity` on PATH."""
    chosen = pytestconfig.getoption("codex_parity_bin")
    if chosen:
        if not (os.path.isfile(chosen) and os.access(chosen, os.X_OK)):
            raise pytest.UsageError(f"--codex-parity-bin {chosen}: not an executable file")
        return chosen
    try:
        return find_codex_parity_bin()
    except FileNotFoundError as e:
        raise pytest.UsageError(str(e)) from None


@pytest.fixture(scope="session")
def codex_bin(pytestconfig: pytest.Config, codex_parity_bin: str) -> str:
    """The path of a real codex binary: `--codex-version`, else the version codex-parity
    pins, installed into codex-parity's cache the first time (needs npm then)."""
    version = pytestconfig.getoption("codex_version")
    try:
        return install_codex(version, bin=codex_parity_bin)
    except RuntimeError as e:
        failed = str(e)
    pytest.fail(f"codex_bin: {failed}", pytrace=False)


@pytest.fixture
def codex_sidecar(request: pytest.FixtureRequest, codex_parity_bin: str) -> Iterator[Sidecar]:
    """A running sidecar for this test. Script it (`enqueue`), point codex at it
    (`base_url`, `write_codex_home`), read what came (`requests`). At teardown anything left
    over fails the test unless the test is marked `codex_parity(lenient=True)`."""
    options = {k: v for k, v in _marker_options(request).items() if k in SIDECAR_OPTIONS}
    try:
        sidecar = Sidecar(bin=codex_parity_bin, **options)
    except (SidecarError, OSError) as e:
        failed = str(e)
    else:
        failed = None
    if failed is not None:
        pytest.fail(f"codex_sidecar: could not start the sidecar: {failed}", pytrace=False)
    yield sidecar
    result = sidecar.close()
    if result.exit_code != 0:
        if result.leftovers:
            what = "\n".join(f"  - {line}" for line in result.leftovers)
            pytest.fail(
                f"codex_sidecar: {len(result.leftovers)} leftover(s) at teardown "
                f"(mark the test codex_parity(lenient=True) to allow them):\n{what}",
                pytrace=False,
            )
        pytest.fail(
            f"codex_sidecar: the sidecar exited with status {result.exit_code}; "
            f"stderr:\n{result.stderr}",
            pytrace=False,
        )


def _report_rows(result: ClientCheckResult, subtests: Any) -> None:
    for row in result.rows:
        with subtests.test(msg=row.mutation):
            _judge_row(row)


def _judge_row(row: Row) -> None:
    if row.must_survive and not row.passed:
        pytest.fail(f"must survive, did not:\n{row.describe()}", pytrace=False)
    if not row.applicable:
        pytest.skip(f"not applicable: {'; '.join(row.reasons)}")
    if not row.passed:
        pytest.xfail(f"failed, not a must-survive mutation:\n{row.describe()}")


@pytest.fixture
def codex_client_check(
    request: pytest.FixtureRequest, pytestconfig: pytest.Config, codex_parity_bin: str, tmp_path
) -> Callable[..., ClientCheckResult]:
    """`codex_client_check(command, source=..., mutations=..., must_survive=...,
    timeout_secs=..., codex_version=..., codex_bin=..., cwd=..., env=...)` runs
    `codex-parity client-check` on `command` (your program, as a list) and returns the
    verdict. Each mutation becomes a result of the test (a subtest, where pytest has the
    `subtests` fixture): a must-survive one that did not pass fails, one that did not apply
    is skipped, another that failed is an expected failure. The test fails when the check
    does, with client-check's table; a refused input (exit 2) fails it with the message."""
    defaults = {k: v for k, v in _marker_options(request).items() if k in CLIENT_CHECK_OPTIONS}
    if "codex_version" not in defaults and pytestconfig.getoption("codex_version"):
        defaults["codex_version"] = pytestconfig.getoption("codex_version")
    try:
        subtests = request.getfixturevalue("subtests")
    except pytest.FixtureLookupError:
        subtests = None
    runs = iter(range(1, 1000))

    def check(command: Sequence[str | os.PathLike[str]], **options: Any) -> ClientCheckResult:
        if "source" not in options:
            raise TypeError("codex_client_check: source= (the session to serve) is required")
        report_dir = options.pop("report_dir", None) or tmp_path / f"client-check-{next(runs)}"
        try:
            result = run_client_check(
                command, report_dir=report_dir, bin=codex_parity_bin, **{**defaults, **options}
            )
        except ClientCheckUsageError as e:
            refused = str(e)
        else:
            refused = None
        if refused is not None:
            pytest.fail(f"client-check refused its input:\n{refused}", pytrace=False)
        if subtests is not None:
            _report_rows(result, subtests)
        if not result.passed:
            pytest.fail(
                f"client-check failed (report: {result.report_dir}):\n{result.table}",
                pytrace=False,
            )
        return result

    return check
