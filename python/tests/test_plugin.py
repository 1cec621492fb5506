"""The pytest plugin against the real codex: the `codex_sidecar` fixture serving `codex exec`,
its teardown failing a test on leftovers, the marker, `codex_client_check` on a client, and
`-p no:codex_parity`."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import sysconfig
import urllib.request
from pathlib import Path

import pytest

import codex_parity
from codex_parity import responses
from helpers import agent_texts, codex_exec

REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "driver" / "tests" / "client_check" / "client.py"
A2 = REPO / "examples" / "scenarios" / "a2_streaming_deltas.toml"
# One result per mutation needs the `subtests` fixture: pytest 9, or pytest-subtests.
HAS_SUBTESTS = pytest.version_tuple >= (9,) or bool(importlib.util.find_spec("pytest_subtests"))


def test_the_installed_binary_is_found(codex_parity_bin):
    # Unless $CODEX_PARITY_BIN says otherwise, the binary the wheel put beside this
    # interpreter (the environment need not be activated).
    installed = Path(sysconfig.get_path("scripts")) / "codex-parity"
    assert codex_parity_bin == os.environ.get("CODEX_PARITY_BIN", str(installed))
    out = subprocess.run([codex_parity_bin, "--version"], capture_output=True, text=True)
    assert out.stdout.strip() == f"codex-parity {codex_parity.__version__}"


def test_codex_exec_is_served_by_the_sidecar(codex_sidecar, codex_bin, tmp_path):
    codex_sidecar.enqueue(responses.streaming_reply(["Hello from ", "the sidecar"]))
    run = codex_exec(codex_bin, codex_sidecar, tmp_path, "say hello")
    assert run.returncode == 0, run.stderr[-2000:]
    assert agent_texts(run.stdout) == ["Hello from the sidecar"]
    [request] = codex_sidecar.requests(min=1, timeout=5)
    assert request.path == "/v1/responses"
    assert request.outcome == "scripted"
    assert "say hello" in request.input_texts()
    assert request.headers["authorization"] == f"Bearer {codex_parity.sidecar.MOCK_API_KEY}"
    assert codex_sidecar.status().pending == 0


def test_plain_http_gets_the_scripted_events(codex_sidecar):
    codex_sidecar.enqueue(responses.assistant_reply("hi", resp_id="resp-x"))
    req = urllib.request.Request(
        codex_sidecar.base_url + "/responses",
        data=json.dumps({"model": "m", "input": "ping"}).encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10) as reply:
        body = reply.read().decode()
    assert "event: response.completed" in body and '"resp-x"' in body
    [captured] = codex_sidecar.requests(min=1, timeout=5)
    assert captured.body == {"model": "m", "input": "ping"}


def test_a_bad_script_is_refused_with_the_sidecars_message(codex_sidecar):
    with pytest.raises(codex_parity.SidecarError, match="enqueue: response 0"):
        codex_sidecar.enqueue({"events": [], "stall_after": 3})
    assert codex_sidecar.status().pending == 0


LEFTOVER_TESTS = """
import os, subprocess, urllib.request, pytest
from codex_parity import responses
import helpers as h

def test_one_response_never_served(codex_sidecar, codex_bin, tmp_path):
    codex_sidecar.enqueue(responses.assistant_reply("first"), responses.assistant_reply("second"))
    run = h.codex_exec(codex_bin, codex_sidecar, tmp_path, "only one turn")
    assert run.returncode == 0, run.stderr

def test_a_request_nothing_answered(codex_sidecar):
    with pytest.raises(Exception):
        urllib.request.urlopen(urllib.request.Request(
            codex_sidecar.base_url + "/responses", data=b"{}"), timeout=10)

@pytest.mark.codex_parity(lenient=True)
def test_lenient_allows_leftovers(codex_sidecar):
    codex_sidecar.enqueue(responses.assistant_reply("unused"))
"""


def test_leftovers_fail_the_test_at_teardown(pytester, codex_bin):
    pytester.makepyfile(test_leftovers=LEFTOVER_TESTS)
    pytester.syspathinsert(Path(__file__).parent)
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=3, errors=2)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_one_response_never_served*",
            "*codex_sidecar: 1 leftover(s) at teardown*",
            "*- never served: scripted response #1: SSE body [[]response.created, *",
            "*ERROR at teardown of test_a_request_nothing_answered*",
            "*- unscripted request: POST /v1/responses (request index 0)",
        ]
    )


def test_an_unknown_marker_option_is_a_usage_error(pytester):
    pytester.makepyfile(
        """
        import pytest
        @pytest.mark.codex_parity(lenent=True)
        def test_typo(codex_sidecar):
            pass
        """
    )
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(["*unknown @pytest.mark.codex_parity option(s) lenent*"])
    assert result.ret != 0


def test_the_plugin_can_be_turned_off(pytester):
    pytester.makepyfile("def test_x(codex_sidecar):\n    pass\n")
    result = pytester.runpytest("-p", "no:codex_parity")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*fixture 'codex_sidecar' not found*"])


def test_a_tolerant_client_passes_client_check(codex_client_check):
    result = codex_client_check(
        [sys.executable, str(CLIENT), "tolerant"],
        source=A2,
        mutations="none,unknown-notification,exit-mid-turn,overloaded",
        must_survive="none,unknown-notification",
    )
    rows = {row.mutation: row for row in result.rows}
    assert list(rows) == ["none", "unknown-notification", "exit-mid-turn", "overloaded"]
    assert all(row.passed for row in result.rows), result.table
    assert rows["none"].must_survive and not rows["overloaded"].must_survive
    assert rows["exit-mid-turn"].expect == "end"
    assert result.passed and result.exit_code == 0 and result.codex
    assert result.junit_path.is_file()


@pytest.mark.skipif(not HAS_SUBTESTS, reason="needs pytest 9 or pytest-subtests")
def test_each_mutation_becomes_a_result(pytester):
    # A strict client: the plain replay passes, the unknown notification fails (allowed:
    # not a must-survive mutation), a tool-call duplicate has nothing to duplicate.
    pytester.makepyfile(
        f"""
        import sys
        def test_rows(codex_client_check):
            codex_client_check([sys.executable, {str(CLIENT)!r}, "strict"], source={str(A2)!r},
                               mutations="none,unknown-notification,duplicate:item/tool/call")
        """
    )
    result = pytester.runpytest("-v")
    result.stdout.fnmatch_lines(
        [
            "*::test_rows SUBPASSED[[]none[]]*",
            "*::test_rows SUBXFAIL[[]unknown-notification[]]*",
            "*::test_rows SUBSKIPPED[[]duplicate:item/tool/call[]]*",
            "*::test_rows PASSED*",
        ]
    )
    assert result.ret == 0


def test_a_failed_client_check_fails_the_test_with_the_table(pytester):
    pytester.makepyfile(
        f"""
        import sys
        def test_strict(codex_client_check):
            codex_client_check([sys.executable, {str(CLIENT)!r}, "strict"], source={str(A2)!r},
                               mutations="none,unknown-notification", must_survive="all")
        """
    )
    result = pytester.runpytest("-v")
    if HAS_SUBTESTS:
        result.stdout.fnmatch_lines(
            [
                "*::test_strict SUBPASSED[[]none[]]*",
                "*::test_strict SUBFAILED[[]unknown-notification[]]*",
                "*::test_strict FAILED*",
                "must survive, did not:",
                "unknown-notification (expects survive): failed, exit 3",
            ]
        )
    result.stdout.fnmatch_lines(
        ["client-check failed (report: *", "unknown-notification  survive  yes   FAIL    3 *"]
    )
    assert result.ret == 1


def test_a_refused_client_check_names_what_to_fix(pytester):
    pytester.makepyfile(
        """
        def test_bad(codex_client_check, tmp_path):
            codex_client_check(["true"], source=tmp_path / "nowhere.toml")
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["client-check refused its input:", "codex-parity: error: no such source: *nowhere.toml;*"]
    )
