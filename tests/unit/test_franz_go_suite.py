"""compat/franz_go_suite.py without a broker: reading `go test -v` output, the allowlist, the results section."""

from __future__ import annotations

from compat import franz_go_suite as franz_go

# What a kgo test binary prints with -test.v: logs stream before the verdicts, parallel subtests
# interleave, a failed test's messages name the file and line.
OUTPUT = """\
=== RUN   TestGroupETL
=== PAUSE TestGroupETL
=== CONT  TestGroupETL
=== RUN   TestGroupETL/range
=== PAUSE TestGroupETL/range
=== RUN   TestGroupETL/range/848
=== PAUSE TestGroupETL/range/848
=== CONT  TestGroupETL/range
=== CONT  TestGroupETL/range/848
    helpers_test.go:866: broker does not support KIP-848 (requires ConsumerGroupHeartbeat, key 68)
=== NAME  TestGroupETL/range
    helpers_test.go:1021: consumers 2: got 1999 keys != exp 2000
    helpers_test.go:981: FAILED TESTING -- NOT DELETING TOPIC abc
--- FAIL: TestGroupETL (12.50s)
    --- FAIL: TestGroupETL/range (12.40s)
    --- SKIP: TestGroupETL/range/848 (0.00s)
FAIL
"""


def test_verdicts_and_reasons_of_a_test_and_its_subtests():
    results = {r.name: r for r in franz_go.classify("TestGroupETL", OUTPUT, 1, False, 13.0, "", requests=250)}
    assert results["TestGroupETL"].outcome == franz_go.FAILED
    assert results["TestGroupETL/range"].outcome == franz_go.FAILED
    assert results["TestGroupETL/range"].reason == "helpers_test.go:1021: consumers 2: got 1999 keys != exp 2000"
    assert results["TestGroupETL/range/848"].outcome == franz_go.SKIPPED
    assert "KIP-848" in results["TestGroupETL/range/848"].reason
    assert results["TestGroupETL/range"].duration == 12.4


def test_a_pass_is_a_run_only_when_the_broker_saw_requests():
    output = "=== RUN   TestPing\n--- PASS: TestPing (0.01s)\nPASS\n"
    assert franz_go.classify("TestPing", output, 0, False, 0.1, "", requests=3)[0].outcome == franz_go.RAN
    assert franz_go.classify("TestPing", output, 0, False, 0.1, "", requests=0)[0].outcome == franz_go.LOCAL
    # Not counted (the TLS pass, the SCRAM tests): a pass is a run.
    assert franz_go.classify("TestPing", output, 0, False, 0.1, "tls", requests=None)[0].key == "TestPing@tls"
    assert franz_go.classify("TestPing", output, 0, False, 0.1, "tls", requests=None)[0].outcome == franz_go.RAN


def test_a_test_without_a_verdict_failed():
    output = "=== RUN   TestTxnEtl\npanic: unable to create admin client: boom\n"
    [result] = franz_go.classify("TestTxnEtl", output, 2, False, 3.0, "", requests=0)
    assert (result.outcome, result.reason) == (franz_go.FAILED, "panic: unable to create admin client: boom")
    [killed] = franz_go.classify("TestTxnEtl", "", -9, True, 700.0, "", requests=0)
    assert killed.outcome == franz_go.FAILED and killed.reason == "killed after 700s"
    # A companion test's verdict in the same process is not this test's.
    output = "--- PASS: TestClient_Produce (1.00s)\n--- PASS: TestGroupSimple (0.00s)\nPASS\n"
    assert [r.name for r in franz_go.classify("TestGroupSimple", output, 0, False, 1.0, "", 5)] == ["TestGroupSimple"]


def test_the_allowlist_only_grows(tmp_path):
    path = tmp_path / "allowlist.txt"
    ran = franz_go.TestResult("TestPing", franz_go.RAN)
    failed = franz_go.TestResult("TestIssue434", franz_go.FAILED)
    tls = franz_go.TestResult("TestPing", franz_go.RAN, harness=franz_go.TLS)
    assert franz_go.grow_allowlist([ran, failed, tls], path) == ["TestPing", "TestPing@tls"]
    assert franz_go.grow_allowlist([franz_go.TestResult("TestPing", franz_go.FAILED)], path) == []
    assert franz_go.read_allowlist(path) == ["TestPing", "TestPing@tls"]
    assert path.read_text().startswith("#")


def test_the_results_section_is_replaced_in_place_and_kept(tmp_path):
    path = tmp_path / "RESULTS.md"
    path.write_text("# Compatibility results\n\nlibrdkafka table\n")
    first = f"{franz_go.SECTION_BEGIN}\nfirst\n{franz_go.SECTION_END}\n"
    path.write_text(franz_go.replace_section(path.read_text(), first))
    second = f"{franz_go.SECTION_BEGIN}\nsecond\n{franz_go.SECTION_END}\n"
    path.write_text(franz_go.replace_section(path.read_text(), second))
    text = path.read_text()
    assert text.startswith("# Compatibility results\n\nlibrdkafka table\n")
    assert "second" in text and "first" not in text and text.count(franz_go.SECTION_BEGIN) == 1
    # `kafka-wire compat` rewrites the rest of the file and keeps the section.
    assert "second" in franz_go.kept_section(path)
    assert franz_go.kept_section(tmp_path / "missing.md") == ""


def test_against_apache_kafka_only_a_failure_of_an_allowlisted_test_counts():
    """Kafka 4.3 still advertises Produce v0-2, so kgo's TestIssueProduceBrokerTooOldFailsRecords skips
    itself there (it runs against kafka-wire); a failure still counts."""
    import datetime

    skipped = franz_go.TestResult("TestIssueProduceBrokerTooOldFailsRecords", franz_go.SKIPPED)
    failed = franz_go.TestResult("TestPing", franz_go.FAILED)
    ran = franz_go.TestResult("TestPing", franz_go.RAN, harness=franz_go.TLS)
    allowlist = ["TestIssueProduceBrokerTooOldFailsRecords", "TestIssueProduceBrokerTooOldFailsRecords@tls",
                 "TestPing", "TestPing@tls", "TestPing@scram512"]
    now = datetime.datetime.now(datetime.timezone.utc)
    against_kafka = franz_go.SuiteReport("Apache Kafka 4.3.0", "v1", None, now, results=[skipped, failed, ran],
                                         allowlist=allowlist, reference=True)
    assert [r.key for r in against_kafka.allowlist_failures] == ["TestPing"]
    assert against_kafka.allowlist_missing == []  # no SCRAM-SHA-512 pass ran; the skipped test has no TLS run
    against_us = franz_go.SuiteReport("kafka-wire", "v1", None, now, results=[skipped, failed, ran],
                                      allowlist=allowlist)
    assert [r.key for r in against_us.allowlist_failures] == ["TestIssueProduceBrokerTooOldFailsRecords", "TestPing"]
    assert against_us.allowlist_missing == ["TestIssueProduceBrokerTooOldFailsRecords@tls"]
    assert not against_us.ok


def test_the_reference_section_stays_after_kafka_wires(tmp_path):
    ours = f"{franz_go.SECTION_BEGIN}\nours\n{franz_go.SECTION_END}\n"
    theirs = f"{franz_go.REFERENCE_BEGIN}\ntheirs\n{franz_go.REFERENCE_END}\n"
    text = franz_go.replace_section("# results\n", theirs)
    text = franz_go.replace_section(text, ours)
    assert text.index("ours") < text.index("theirs")
    text = franz_go.replace_section(text, theirs.replace("theirs", "again"))
    assert "theirs" not in text and text.index("ours") < text.index("again")
    path = tmp_path / "RESULTS.md"
    path.write_text(text)
    kept = franz_go.kept_section(path)
    assert "ours" in kept and "again" in kept and "# results" not in kept
