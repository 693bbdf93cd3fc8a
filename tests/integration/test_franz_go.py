"""`kafka-wire compat franz-go --quick` in CI: franz-go's own kgo integration tests, unmodified.

The kgo test binary is built by compat/setup-franz-go.sh (scripts/setup-tests.sh runs it) from the
franz-go release pinned in compat/franz-go/go.mod. The quick form starts its own kafka-wire broker
(PLAINTEXT, SCRAM over SASL_PLAINTEXT, TLS) and runs TestGroupETL and TestTxnEtl with every subtest
(range, cooperative-sticky, static members, KIP-848), TestClient_ProduceLargeMessages, the five
share-group tests (KIP-932) and a few
others with KGO_TEST_RECORDS=2000, then two of them again over TLS, three test processes at a time,
each against a broker of its own (`--parallel 3`, the quick form's default). An allowlisted test that fails,
or an ETL subtest that is skipped, fails this test. The full run is `kafka-wire compat franz-go`.

When test_faults.py's quick form runs in the same session it starts this command first (start_early),
so that the two run at the same time (the fault runs mostly wait); test_franz_go_quick then judges it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compat import franz_go_suite as franz_go
from tests.compat_command import CompatCommand, selected, start_early, started_early

COMMAND_TIMEOUT = 600  # seconds; the quick form takes about 1 minute on 2 cores (3 test processes at once)

pytestmark = [pytest.mark.clients, pytest.mark.timeout(COMMAND_TIMEOUT + 60)]

# The subtests the issue names: each chain's balancers, static members and KIP-848.
ETL_SUBTESTS = ("range", "cooperative-sticky", "cooperative-sticky/static", "range/848", "sticky/848",
                "sticky/848/static")


@pytest.fixture(scope="module")
def kgo_binary():
    binary = franz_go.find_binary()
    if binary is None:
        from tests.conftest import missing_tool

        missing_tool("franz-go's kgo test binary (compat/setup-franz-go.sh builds it into .deps/franz-go)")
    return binary


def test_allowlist_names_real_kgo_broker_tests(kgo_binary):
    tests = set(franz_go.list_tests(kgo_binary))
    keys = franz_go.read_allowlist()
    assert len(set(keys)) == len(keys), "a test is allowlisted twice"
    unknown = [key for key in keys if key.split("@")[0].split("/")[0] not in tests]
    assert not unknown, f"allowlisted tests that franz-go {franz_go.franz_go_version()} does not have: {unknown}"
    for chain in ("TestGroupETL", "TestTxnEtl"):
        for name in (chain, *(f"{chain}/{sub}" for sub in ETL_SUBTESTS)):
            assert name in keys, f"{name} is not allowlisted"
    quick = [name for name in franz_go.QUICK_TESTS if name not in keys]
    assert not quick, f"the quick subset runs tests that are not allowlisted: {quick}"


EARLY = "franz-go-quick"  # start_early's name for test_franz_go_quick's command


def command_args(folder: Path) -> list[str]:
    return ["franz-go", "--quick", "--results", str(folder / "RESULTS.md"), "--log-dir", str(folder / "logs")]


def start_beside(session: pytest.Session, folder: Path) -> None:
    """Starts test_franz_go_quick's command now, its results in `folder`, when that test is to run
    in `session` and the kgo test binary is built (else the test itself says what is missing)."""
    if franz_go.find_binary() is None or not selected(session, "test_franz_go.py::test_franz_go_quick"):
        return
    folder.mkdir(parents=True, exist_ok=True)
    start_early(EARLY, command_args(folder), COMMAND_TIMEOUT)


def test_franz_go_quick(kgo_binary, tmp_path):
    running = started_early(EARLY) or CompatCommand(command_args(tmp_path), COMMAND_TIMEOUT)
    folder = Path(running.args[running.args.index("--log-dir") + 1]).parent  # its results and logs
    done, output = running.result()
    report = json.loads((folder / franz_go.JSON_RESULTS_PATH.name).read_text())
    outcomes = {t["name"]: t for t in report["tests"]}
    assert not report["allowlist_failures"], "allowlisted kgo tests failed:\n" + "\n".join(
        f"  {name}: {outcomes[name]['outcome']}: {outcomes[name]['reason']} (log: {folder / 'logs' / 'tests'})"
        for name in report["allowlist_failures"]) + f"\n{output}"
    for chain in ("TestGroupETL", "TestTxnEtl"):
        for name in (chain, *(f"{chain}/{sub}" for sub in ETL_SUBTESTS)):
            assert outcomes.get(name, {}).get("outcome") == franz_go.RAN, f"{name}: {outcomes.get(name)}\n{output}"
    for name in franz_go.QUICK_TESTS:
        assert outcomes[name]["outcome"] == franz_go.RAN, f"{name}: {outcomes[name]}\n{output}"
    for name in franz_go.QUICK_TLS_TESTS:
        assert outcomes[f"{name}@tls"]["outcome"] == franz_go.RAN, f"{name}@tls: {outcomes[f'{name}@tls']}\n{output}"
    # Requests reached the broker through the counting proxy: these ran against kafka-wire.
    assert outcomes["TestGroupETL"]["requests"] > 100, outcomes["TestGroupETL"]
    assert report["ok"] and done.returncode == 0, output
    assert "## franz-go's kgo integration tests" in (folder / "RESULTS.md").read_text()
