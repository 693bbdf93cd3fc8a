"""compat/: tests that fail against any broker because of a bug in the suite's librdkafka are
excluded only for the versions that have the bug, and their process siblings still run."""

from compat.librdkafka_suite import CLIENT_BUGS, EXCLUDED, SuiteTest, classify_without_running, with_client_bugs

TABLE = [
    SuiteTest("0045_subscribe_update", frozenset(), ("default",)),
    SuiteTest("0045_subscribe_update_topic_remove", frozenset(), ("noautocreate",)),
    SuiteTest("0045_subscribe_update_non_exist_and_partchange", frozenset(), ("noautocreate",)),
    SuiteTest("0113_cooperative_rebalance", frozenset(), ("default",)),
]


def by_name(tests):
    return {t.name: t for t in tests}


def test_buggy_versions_exclude_the_tests_and_filter_their_siblings_subtests():
    tests = by_name(with_client_bugs(TABLE, "2.0.2"))
    for name in ("0045_subscribe_update_topic_remove", "0113_cooperative_rebalance"):
        result = classify_without_running(tests[name])
        assert result is not None and result.outcome == EXCLUDED and "4187" in result.reason
    sibling = tests["0045_subscribe_update_non_exist_and_partchange"]
    assert classify_without_running(sibling) is None
    assert sibling.subtests == CLIENT_BUGS["0045_subscribe_update_topic_remove"].others_subtests
    # Another scenario's test of the same number runs in another process: no filter.
    assert tests["0045_subscribe_update"].subtests is None


def test_fixed_versions_run_everything():
    tests = by_name(with_client_bugs(TABLE, "2.1.0"))
    assert all(classify_without_running(t) is None and t.subtests is None for t in tests.values())
