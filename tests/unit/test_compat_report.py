"""The compatibility suite's bookkeeping, without a broker: librdkafka's test table, how a test
run is classified (ran / failed / no-op), the allowlist, the client programs' feature lines and
the matrix built from them."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

from compat import clients, librdkafka_suite as suite, matrix

CLIENTS_DIR = Path(__file__).resolve().parent.parent / "clients"

TEST_TABLE = """
struct test tests[] = {
    {.name = "<MAIN>", .flags = TEST_F_LOCAL},
    _TEST(0000_unittests,
          TEST_F_LOCAL,
          _THRES(.ucpu = 100.0, .scpu = 20.0, .rss = 900.0)),
    _TEST(0001_multiobj, 0),
    _TEST(0028_long_topicnames,
          TEST_F_KNOWN_ISSUE,
          TEST_BRKVER(0, 9, 0, 0),
          .extra = "https://github.com/edenhill/librdkafka/issues/529"),
    _TEST(0045_subscribe_update_topic_remove,
          0,
          TEST_BRKVER(0, 9, 0, 0),
          .scenario = "noautocreate"),
#if WITH_SOCKEM
    _TEST(0049_consume_conn_close, TEST_F_SOCKEM, TEST_BRKVER(0, 9, 0, 0)),
#endif
    _TEST(0055_producer_latency, TEST_F_KNOWN_ISSUE_WIN32),
    _TEST(0103_transactions,
          0,
          TEST_BRKVER(0, 11, 0, 0),
          .scenario = "default,ak23"),
    _TEST(8000_idle, TEST_F_MANUAL),

    {NULL}};
"""


def test_parse_test_table_reads_names_flags_and_scenarios():
    tests = {t.name: t for t in suite.parse_test_table(TEST_TABLE)}
    assert list(tests) == ["0000_unittests", "0001_multiobj", "0028_long_topicnames",
                           "0045_subscribe_update_topic_remove", "0049_consume_conn_close",
                           "0055_producer_latency", "0103_transactions", "8000_idle"]
    assert not tests["0000_unittests"].needs_broker
    assert tests["0001_multiobj"].exclusion() is None and tests["0001_multiobj"].scenario == "default"
    assert "known issue" in tests["0028_long_topicnames"].exclusion()
    assert tests["0045_subscribe_update_topic_remove"].scenario == "noautocreate"
    assert "sockem" in tests["0049_consume_conn_close"].exclusion()
    assert tests["0055_producer_latency"].exclusion() is None  # a Windows-only known issue
    assert tests["0103_transactions"].scenarios == ("default", "ak23")
    assert tests["8000_idle"].exclusion() == "manual test"


def sent(client: str, api: str, version: int = 3) -> str:
    return (f"%7|1795355017.890|SEND|{client}#producer-1| [thrd:127.0.0.1:1/bootstrap]: 127.0.0.1:1/1: "
            f"Sent {api}Request (v{version}, 53 bytes @ 0, CorrId 1)")


def classify(tmp_path, names, output, states, returncode=0, timed_out=False):
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"tests": {n: {"name": n, "state": s, "duration": 1.5}
                                            for n, s in states.items()}}))
    group = [suite.SuiteTest(n, frozenset(), ("default",)) for n in names]
    return {r.test.name: r for r in suite._classify(group, output, report, returncode, timed_out, 2.0, 300)}


def test_a_passing_test_that_did_broker_work_ran(tmp_path):
    output = "\n".join([sent("0012_produce_consume", "ApiVersion"), sent("0012_produce_consume", "Produce", 7),
                        sent("0012_produce_consume", "Produce", 7), sent("0012_produce_consume", "Metadata", 4)])
    result = classify(tmp_path, ["0012_produce_consume"], output, {"0012_produce_consume": "PASSED"})[
        "0012_produce_consume"]
    assert result.outcome == suite.RAN
    assert result.requests == collections.Counter({"ApiVersion v3": 1, "Produce v7": 2, "Metadata v4": 1})
    assert result.broker_requests == 3


def test_passing_with_only_apiversions_or_skipping_is_a_no_op(tmp_path):
    output = "\n".join([
        sent("0001_a", "ApiVersion"),
        "[0002_b                      /  0.001s] SKIPPING TEST: needs SASL configured",
    ])
    results = classify(tmp_path, ["0001_a", "0002_b"], output, {"0001_a": "PASSED", "0002_b": "SKIPPED"})
    assert results["0001_a"].outcome == suite.NO_OP
    assert results["0002_b"].outcome == suite.NO_OP
    assert results["0002_b"].reason == "needs SASL configured"


def test_failures_carry_the_suites_own_reason(tmp_path):
    output = "\n".join([
        sent("0019_list_groups", "ListGroups", 0),
        '\x1b[31m### Test "0019_list_groups (do_test_list_groups:162)" failed at 0019-list_groups.c:175:'
        'do_test_list_groups() at Sun Nov 22 13:43:39 2026: ###',
        "Saw -1 groups when there wasn't supposed to be any",
    ])
    result = classify(tmp_path, ["0019_list_groups"], suite._ANSI.sub("", output),
                      {"0019_list_groups": "FAILED"})["0019_list_groups"]
    assert result.outcome == suite.FAILED
    assert "Saw -1 groups" in result.reason and "0019-list_groups.c:175" in result.reason


def test_failure_reasons_survive_parentheses_in_subtest_names(tmp_path):
    output = "\n".join([
        '### Test "0055_producer_latency (test_producer_latency:185: transactions (35ms) (linger.ms=1))" failed '
        'at 0055-producer_latency.c:209:test_producer_latency() at Sun Nov 22 14:00:26 2026: ###',
        "rd_kafka_init_transactions(rk, 10 * 1000) failed: Broker: Coordinator not available",
    ])
    result = classify(tmp_path, ["0055_producer_latency"], output, {"0055_producer_latency": "FAILED"})[
        "0055_producer_latency"]
    assert result.reason.startswith("0055-producer_latency.c:209:test_producer_latency(): "
                                    "rd_kafka_init_transactions(rk, 10 * 1000) failed")
    assert "transactions (35ms) (linger.ms=1)" in result.reason


def test_tests_creating_replicated_topics_need_a_cluster(tmp_path):
    tests_dir = tmp_path / "librdkafka-9.9.9" / "tests"
    tests_dir.mkdir(parents=True)
    (tests_dir / "test.c").write_text(TEST_TABLE)
    (tests_dir / "0001-multiobj.c").write_text("test_create_topic(rk, topic, 4, 1);\n")
    (tests_dir / "0103-transactions.c").write_text("test_create_topic(p, topic,\n    partition_cnt, 3);\n")
    tests = {t.name: t for t in suite.SuiteBuild(tests_dir.parent).tests()}
    assert tests["0001_multiobj"].exclusion() is None
    assert "3-broker cluster" in tests["0103_transactions"].exclusion()


def test_a_pass_followed_by_a_runner_crash_or_a_timeout_is_a_failure(tmp_path):
    output = sent("0005_order", "Produce", 7)
    crashed = classify(tmp_path, ["0005_order"], output, {"0005_order": "PASSED"}, returncode=134)["0005_order"]
    assert crashed.outcome == suite.FAILED and "exited with status 134" in crashed.reason
    hung = classify(tmp_path, ["0005_order"], output, {}, returncode=-9, timed_out=True)["0005_order"]
    assert hung.outcome == suite.FAILED and "did not finish" in hung.reason


def test_requests_are_attributed_by_client_name(tmp_path):
    output = "\n".join([sent("0045_x", "Fetch", 11), sent("0045_y", "ApiVersion"), sent("rdkafka", "ApiVersion")])
    results = classify(tmp_path, ["0045_x", "0045_y"], output, {"0045_x": "PASSED", "0045_y": "PASSED"})
    assert results["0045_x"].outcome == suite.RAN
    assert results["0045_y"].outcome == suite.NO_OP  # only handshakes, its own and an unnamed client's


def test_the_allowlist_only_grows(tmp_path):
    path = tmp_path / "allowlist.txt"
    path.write_text("# comment\n0001_multiobj  # first\n")
    test = lambda name: suite.SuiteTest(name, frozenset(), ("default",))  # noqa: E731
    results = [suite.TestResult(test("0001_multiobj"), suite.FAILED),
               suite.TestResult(test("0012_produce_consume"), suite.RAN),
               suite.TestResult(test("0019_list_groups"), suite.NO_OP)]
    assert suite.grow_allowlist(results + results, path) == ["0012_produce_consume"]  # listed once
    assert suite.read_allowlist(path) == ["0001_multiobj", "0012_produce_consume"]
    assert suite.grow_allowlist(results, path) == []


def test_test_conf_follows_the_suites_harness():
    conf = suite.test_conf("127.0.0.1:9092")
    assert "bootstrap.servers=127.0.0.1:9092\n" in conf
    assert "test.timeout.multiplier=2\n" in conf and "broker.address.family=v4\n" in conf
    assert "security.protocol=PLAINTEXT\n" in conf
    sasl = suite.test_conf("127.0.0.1:9092", sasl=True)
    assert "security.protocol=SASL_PLAINTEXT\n" in sasl and "sasl.username=testuser\n" in sasl
    assert "security.protocol=PLAINTEXT\n" not in sasl


def test_runs_over_sasl_have_their_own_allowlist_names(tmp_path):
    path = tmp_path / "allowlist.txt"
    result = suite.TestResult(suite.SuiteTest("0012_produce_consume", frozenset(), ("default",)), suite.RAN,
                              harness="sasl")
    assert result.key == "0012_produce_consume@sasl"
    assert suite.grow_allowlist([result], path) == ["0012_produce_consume@sasl"]
    assert result.as_json()["name"] == "0012_produce_consume@sasl"


# --- client programs and the matrix ------------------------------------------------------------

@pytest.fixture
def acceptance(monkeypatch):
    monkeypatch.syspath_prepend(str(CLIENTS_DIR))
    import acceptance as module

    return module


def test_client_features_line_records_pass_fail_and_absence(acceptance, capsys):
    progress = acceptance.Progress("demo")
    with progress.step("connect", ["metadata"]):
        pass
    with progress.check("read", ["fetch"]):
        raise acceptance.CheckFailed("mismatch")
    with progress.check("offsets", ["list-offsets", "fetch"]):
        pass
    with pytest.raises(RuntimeError), progress.step("produce", ["produce:gzip"]):
        raise RuntimeError("broken")
    features, passed = clients.parse_features("noise\n" + progress.features_line() + "\n")
    assert features == {"metadata": "pass", "fetch": "fail", "list-offsets": "pass", "produce:gzip": "fail"}
    assert passed is False
    assert acceptance.FEATURES == matrix.FEATURES


def test_unknown_feature_names_are_refused(acceptance):
    with pytest.raises(ValueError), acceptance.Progress("demo").step("x", ["teleport"]):
        pass


def test_a_clients_runs_merge_with_failure_winning():
    run_a = clients.ClientRun("confluent-kafka", "plain", lambda b, q: ([], None))
    run_b = clients.ClientRun("confluent-kafka", "idempotent", lambda b, q: ([], None))
    outcomes = [clients.RunOutcome(run_a, passed=True, features={"fetch": "pass", "produce:none": "pass"}),
                clients.RunOutcome(run_b, passed=False, features={"produce:none": "fail", "idempotence": "fail"},
                                   detail="boom")]
    (row,) = clients.merge_rows(outcomes)
    assert row.features == {"fetch": "pass", "produce:none": "fail", "idempotence": "fail"}
    assert row.passed is False and row.details == ["idempotent: boom"]
    cells, overall = matrix.client_cells(row)
    assert cells["sasl"].verdict == clients.NOT_RUN and overall == clients.FAIL


def test_the_suite_row_counts_a_failure_against_the_most_specific_feature():
    def result(name, outcome, *apis):
        return suite.TestResult(suite.SuiteTest(name, frozenset(), ("default",)), outcome,
                                requests=collections.Counter({f"{api} v1": 1 for api in apis}))

    results = [result("0012_produce_consume", suite.RAN, "Metadata", "Produce", "Fetch"),
               result("0017_compression", suite.RAN, "Metadata", "Produce"),
               result("0018_cgrp_term", suite.FAILED, "Metadata", "Produce", "FindCoordinator"),
               result("0035_api_version", suite.NO_OP, "ApiVersion")]
    cells, overall = matrix.suite_cells(results)
    assert cells["groups"] == matrix.Cell("fail", "0/1")
    assert cells["metadata"] == matrix.Cell("pass", "2/2")
    assert cells["produce:none"] == matrix.Cell("pass", "2/2")
    assert cells["produce:zstd"] == matrix.Cell("pass", "1/1")
    assert cells["transactions"].verdict == "not-run"
    assert overall == "fail"
    text = matrix.build_matrix([], results).render_text()
    assert text.splitlines()[0].split()[:3] == ["client", "metadata", "produce:none"]


# --- the counting proxy ------------------------------------------------------------------------

def test_counting_proxy_forwards_both_ways_and_counts_requests_by_client():
    import socket
    import struct
    import threading

    from compat.traffic import CountingProxy

    upstream = socket.socket()
    upstream.bind(("127.0.0.1", 0))
    upstream.listen(1)
    received = []

    def broker():  # answers each frame with a frame holding its correlation id
        connection, _ = upstream.accept()
        with connection:
            stream = connection.makefile("rb")
            for _ in range(2):
                size = struct.unpack(">i", stream.read(4))[0]
                frame = stream.read(size)
                received.append(frame)
                connection.sendall(struct.pack(">i", 4) + frame[4:8])

    threading.Thread(target=broker, daemon=True).start()

    def request(api_key, version, correlation_id, client_id):
        body = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id + b"\x00"
        return struct.pack(">i", len(body)) + body

    with CountingProxy(("127.0.0.1", upstream.getsockname()[1])) as proxy:
        proxy.start()
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as client:
            frames = request(18, 3, 1, b"0012_produce_consume") + request(0, 7, 2, b"rdkafka")
            client.sendall(frames)  # pipelined, as clients do
            answers = b""
            while len(answers) < 16:
                answers += client.recv(64)
        assert struct.unpack(">iiii", answers) == (4, 1, 4, 2)
        assert b"".join(struct.pack(">i", len(f)) + f for f in received) == frames  # forwarded unchanged
        assert proxy.take() == collections.Counter({("0012_produce_consume", "ApiVersions", 3): 1,
                                                    ("rdkafka", "Produce", 7): 1})
        assert proxy.take() == collections.Counter()
    upstream.close()


def test_proxy_counts_are_attributed_to_the_named_test(tmp_path):
    counted = collections.Counter({("0045_x", "Fetch", 11): 3, ("rdkafka", "Metadata", 4): 1,
                                   ("0045_y", "ApiVersions", 3): 2})
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"tests": {"0045_x": {"state": "PASSED"}, "0045_y": {"state": "PASSED"}}}))
    group = [suite.SuiteTest(n, frozenset(), ("default",)) for n in ("0045_x", "0045_y")]
    results = {r.test.name: r for r in suite._classify(group, sent("0045_y", "Produce"), report, 0, False, 1, 300,
                                                        counted)}
    assert results["0045_x"].requests == collections.Counter({"Fetch v11": 3, "Metadata v4": 1})
    # The proxy's count is what reached the broker; the client's log is not consulted.
    assert results["0045_y"].requests == collections.Counter({"ApiVersions v3": 2, "Metadata v4": 1})
    assert results["0045_y"].outcome == suite.RAN


def test_a_failed_allowlisted_test_runs_again_alone_and_keeps_the_first_reason(monkeypatch, tmp_path):
    import datetime

    from compat import runner

    flaky = suite.SuiteTest("0102_static_group_rebalance", frozenset(), ("default",))
    broken = suite.SuiteTest("0012_produce_consume", frozenset(), ("default",))
    other = suite.SuiteTest("0081_admin", frozenset(), ("default",))
    report = runner.CompatReport(runner.Options(), datetime.datetime.now())
    report.allowlist = ["0102_static_group_rebalance", "0012_produce_consume"]
    report.suite_results = [suite.TestResult(flaky, suite.FAILED, reason="timed out awaiting an event"),
                            suite.TestResult(broken, suite.FAILED, reason="wrong offset"),
                            suite.TestResult(other, suite.FAILED, reason="not allowlisted")]
    reruns = []

    def run_tests(build, tests, lanes, kafka_version, log_dir, process_timeout, on_result):
        [test] = tests
        reruns.append((test.name, list(lanes)))
        return [suite.TestResult(test, suite.RAN if test is flaky else suite.FAILED, reason="again")]

    monkeypatch.setattr(suite, "run_tests", run_tests)
    said = []
    runner._retry_allowlisted_failures(runner.Options(), None, report, ["lane-1", "lane-2"], [], tmp_path,
                                       said.append, lambda result: None)
    # Only the allowlisted failures run again, each alone on one lane.
    assert reruns == [("0102_static_group_rebalance", ["lane-1"]), ("0012_produce_consume", ["lane-1"])]
    assert [(r.key, r.outcome) for r in report.suite_results] == [
        ("0102_static_group_rebalance", suite.RAN), ("0012_produce_consume", suite.FAILED),
        ("0081_admin", suite.FAILED)]
    assert "first run failed: timed out awaiting an event" in report.suite_results[0].reason
    assert report.retried_passes == ["0102_static_group_rebalance"]
    assert [r.key for r in report.allowlist_failures] == ["0012_produce_consume"]


def test_the_quick_form_leaves_out_the_named_long_tests_and_runs_sasl_beside_the_plain_pass(monkeypatch, tmp_path):
    import datetime
    import threading

    from compat import runner

    left_out = next(iter(suite.QUICK_LEAVES_OUT))
    names = ["0001_multiobj", "0012_produce_consume", left_out, "0081_admin"]
    tests = [suite.SuiteTest(name, frozenset(), ("default",)) for name in names]

    class Build:
        version = "2.0.2"

        def tests(self):
            return tests

    monkeypatch.setattr(suite, "ensure_built", lambda say: Build())
    sasl_started = threading.Event()
    runs = {}

    def run_tests(build, chosen, lanes, kafka_version, log_dir, process_timeout, on_result):
        harness = lanes[0].harness
        if harness == "sasl":
            sasl_started.set()
        else:  # the plain pass sees the SASL pass start before it ends
            runs["sasl beside plain"] = sasl_started.wait(60)
        runs[harness] = [t.name for t in chosen]
        return [suite.TestResult(t, suite.RAN, harness=harness) for t in chosen]

    monkeypatch.setattr(suite, "run_tests", run_tests)
    lanes = [suite.Lane("default", "a:1"), suite.Lane("default", "b:1", harness="sasl")]

    def run(options):
        report = runner.CompatReport(options, datetime.datetime.now(), log_dir=tmp_path)
        report.allowlist = [*names[:3], "0001_multiobj@sasl"]
        runner._run_librdkafka(options, lanes, report, lambda line: None)
        return report

    report = run(runner.Options(quick=True))
    assert runs == {"sasl beside plain": True, "": ["0001_multiobj", "0012_produce_consume"],
                    "sasl": ["0001_multiobj"]}
    assert report.left_out == [left_out]
    assert runner.results_json(report)["librdkafka"]["left_out"] == [left_out]
    assert f"left out 1 (run by `--quick --whole-allowlist`" in runner.results_markdown(report)
    assert not report.allowlist_failures

    runs.clear()
    report = run(runner.Options(quick=True, whole_allowlist=True))
    assert runs[""] == names[:3] and report.left_out == []


def test_the_longest_tests_start_first(monkeypatch, tmp_path):
    names = ["0001_multiobj", "0012_produce_consume", "0081_admin", "0045_subscribe_update",
             "0045_subscribe_update_non_exist_and_partchange", "0102_static_group_rebalance"]
    tests = [suite.SuiteTest(name, frozenset(), ("default",)) for name in names]
    started = []

    def run_process(build, group, lane, kafka_version, log_dir, process_timeout):
        started.append(group[0].number)
        return [suite.TestResult(t, suite.RAN) for t in group]

    monkeypatch.setattr(suite, "_run_process", run_process)
    suite.run_tests(None, tests, [suite.Lane("default", "a:1")], "3.9.0", tmp_path)
    # 0081 (227 s), 0102 (51 s), 0045 (two tests of one process, 15 + 15 s), then by number.
    assert started == ["0081", "0102", "0045", "0001", "0012"]
    started.clear()
    suite.run_tests(None, tests, [suite.Lane("default", "a:1")], "3.9.0", tmp_path,
                    expected={"0001_multiobj": 1.0})
    assert started == ["0001", "0012", "0045", "0081", "0102"]
