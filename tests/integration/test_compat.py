"""`kafka-wire compat --quick` in CI: the client programs and the allowlisted librdkafka tests.

The command starts its own brokers, runs every client program in its quick form and the
librdkafka integration tests listed in compat/librdkafka-allowlist.txt (built by
compat/setup-librdkafka.sh, which scripts/setup-tests.sh runs), and writes its results as JSON.
An allowlisted librdkafka test that fails, or that stops doing broker work, fails this test.
The quick form leaves out the nine long allowlisted tests of client-side features that
compat/librdkafka_suite.py QUICK_LEAVES_OUT names (with the tests that cover their broker side);
KW_SLOW=1 runs every allowlisted test (`--whole-allowlist`).

(test_conformance.py's command, when that test runs in the same session, starts with the session's first
test, tests/conftest.py, and runs beside the tests before it.)
"""

from __future__ import annotations

import json
import os
import re

import pytest

from compat import librdkafka_suite as suite
from tests.compat_command import run_compat

COMMAND_TIMEOUT = 900  # seconds; the quick form takes about 3 minutes on 2 cores (0081_admin alone ~100 s)
WHOLE = os.environ.get("KW_SLOW") == "1"  # every allowlisted librdkafka test, the long ones too

pytestmark = [pytest.mark.clients, pytest.mark.timeout(COMMAND_TIMEOUT + 60)]


@pytest.fixture(scope="module")
def librdkafka_build():
    build = suite.find_build()
    if build is None:
        from tests.conftest import missing_tool

        missing_tool("librdkafka's test suite (compat/setup-librdkafka.sh builds it into .deps/librdkafka)")
    return build


def test_allowlist_is_large_enough_and_known(librdkafka_build):
    """The allowlist names real broker tests of the suite we build, at least the 50 the issue asks for."""
    allowlist = [key.split("@")[0] for key in suite.read_allowlist()]  # `@sasl`: the same test over SASL
    tests = {t.name: t for t in librdkafka_build.tests()}
    unknown = [name for name in allowlist if name not in tests]
    assert not unknown, f"allowlisted tests that librdkafka {librdkafka_build.version} does not have: {unknown}"
    local = [name for name in allowlist if not tests[name].needs_broker]
    assert not local, f"allowlisted tests that need no broker (they prove nothing about ours): {local}"
    keys = suite.read_allowlist()
    assert len(set(keys)) == len(keys), "an allowlisted test is listed twice"
    plain = [key for key in keys if "@" not in key]
    assert len(plain) >= 50, f"only {len(plain)} allowlisted librdkafka broker tests"
    # What the quick form leaves out is allowlisted (so the whole form still fails on it), and the
    # tests said to cover its broker side are run by the quick form.
    quick = suite.quick_selection(keys)
    assert set(suite.QUICK_LEAVES_OUT) <= set(plain), set(suite.QUICK_LEAVES_OUT) - set(plain)
    assert len(quick) >= 50, f"the quick form runs only {len(quick)} librdkafka broker tests"
    for name, reason in suite.QUICK_LEAVES_OUT.items():
        named = set(re.findall(r"\b\d{4}\b", reason))
        assert named, f"{name}: the reason names no test of the quick form covering it"
        runs = {key.split("_")[0] for key in quick}
        assert named <= runs, f"{name}: {sorted(named - runs)} not run by the quick form"


def test_compat_quick(librdkafka_build, tmp_path):
    results = tmp_path / "RESULTS.md"
    done, output = run_compat(["--quick", *(["--whole-allowlist"] if WHOLE else []), "--results", str(results),
                               "--log-dir", str(tmp_path / "logs")], COMMAND_TIMEOUT)
    assert results.is_file(), f"no results written:\n{output}"
    report = json.loads(results.with_suffix(".json").read_text())

    librdkafka = report["librdkafka"]
    assert librdkafka is not None, f"librdkafka's suite did not run: {report['librdkafka_problem']}\n{output}"
    failed = {t["name"]: t for t in librdkafka["tests"] if t["name"] in librdkafka["allowlist_failures"]}
    assert not failed, "allowlisted librdkafka tests failed:\n" + "\n".join(
        f"  {name}: {t['outcome']}: {t['reason']} (log: {tmp_path / 'logs' / 'librdkafka'})"
        for name, t in failed.items()) + f"\n{output}"
    assert not librdkafka["allowlist_missing"]
    ran = {t["name"] for t in librdkafka["tests"] if t["outcome"] == suite.RAN}
    left_out = set() if WHOLE else set(suite.QUICK_LEAVES_OUT)
    assert set(librdkafka["left_out"]) == left_out
    assert ran == set(librdkafka["allowlist"]) - left_out, output

    broken = [c for c in report["clients"] if c["available"] and not c["passed"]]
    assert not broken, "client checks failed:\n" + "\n".join(f"  {c['run']}: {c['detail']}" for c in broken) \
        + f"\n{output}"
    assert report["ok"] and done.returncode == 0, output
    # The matrix is printed and written: one row per client that ran, plus librdkafka's.
    assert "librdkafka test suite" in report["matrix"]
    assert "| client | metadata |" in results.read_text()
