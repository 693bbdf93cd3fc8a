"""The fault checker (compat/faults/checker.py): fed a history with each anomaly class, it reports
that class and only that class; a clean history reports none."""

from __future__ import annotations

import pytest

from compat.faults.checker import ANOMALY_CLASSES, check, value_order
from compat.faults.history import HistoryRecorder, read_history, write_history

T = "queue"


def send(value, partition, offset, status="ok", at=1.0, process="p0"):
    op = {"f": "send", "process": process, "time": at - 0.1, "end": at, "topic": T, "partition": partition,
          "value": value, "status": status}
    if status == "ok":
        op["offset"] = offset
    return op


def poll(process, records, at=2.0, isolation="read_uncommitted"):
    return {"f": "poll", "process": process, "time": at - 0.1, "end": at, "isolation": isolation,
            "records": [[T, p, o, v] for p, o, v in records]}


def final(partitions, at=10.0, isolation="read_uncommitted", process="r0"):
    """r0 (or `process`) read these partitions to their high watermarks: what it read is the log."""
    return {"f": "final", "process": process, "time": at, "end": at, "isolation": isolation,
            "reached": [[T, p, hw] for p, hw in partitions]}


def txn(name, status, writes, at=3.0, commit_time=None):
    return {"f": "txn", "process": "t0", "time": at - 1, "end": at, "txn": name, "status": status,
            "commit_time": at - 0.5 if commit_time is None else commit_time,
            "writes": [[T, p, v] for p, v in writes]}


def clean_queue_history():
    return [send("p0:0", 0, 0), send("p0:1", 0, 1, at=1.1), send("p0:2", 0, 2, at=1.2),
            poll("r0", [(0, 0, "p0:0"), (0, 1, "p0:1")], at=1.5), poll("r0", [(0, 2, "p0:2")], at=1.6),
            final([(0, 3)])]


def only(report, name):
    assert {k for k, n in report.counts.items() if n} == {name}, report.summary()
    return report.anomalies[name]


def test_a_clean_history_has_no_anomaly():
    report = check(clean_queue_history())
    assert report.valid, report.summary()
    assert report.acknowledged == 3 and report.read == 3


def test_lost_acknowledged_write():
    history = clean_queue_history() + [send("p0:3", 0, 3, at=1.3)]
    assert only(check(history), "lost")[0]["value"] == "p0:3"


def test_a_write_read_once_but_missing_from_the_final_read_is_lost():
    history = [op for op in clean_queue_history() if op["f"] != "final"] + [
        {"f": "poll", "process": "final", "time": 9.0, "end": 9.1, "isolation": "read_uncommitted",
         "records": [[T, 0, 0, "p0:0"], [T, 0, 1, "p0:1"]]}, final([(0, 2)], process="final")]
    example = only(check(history), "lost")[0]
    assert example["value"] == "p0:2" and example["read_before"] is True


def test_an_unseen_write_is_unchecked_without_a_drain_or_a_later_offset():
    history = [op for op in clean_queue_history() if op["f"] != "final"] + [send("p0:3", 0, 3, at=1.3)]
    report = check(history)
    assert report.valid and report.unchecked == 1


def test_an_unseen_write_below_a_seen_offset_is_lost_without_a_drain():
    history = [send("p0:0", 0, 0), send("p0:1", 0, 1), poll("r0", [(0, 1, "p0:1")])]
    assert only(check(history), "lost")[0]["value"] == "p0:0"


def test_unknown_writes_may_be_missing_or_present():
    history = clean_queue_history() + [send("p0:3", 0, None, status="info"), send("p0:4", 0, None, status="info"),
                                       poll("r1", [(0, 3, "p0:4")], at=3)]
    report = check(history)
    assert report.valid, report.summary()
    assert report.unknown == 2


def test_duplicate():
    history = clean_queue_history() + [poll("r1", [(0, 3, "p0:2")], at=3)]
    report = check(history)
    assert only(report, "duplicate")[0]["at"] == [(T, 0, 2), (T, 0, 3)]


def test_reorder_within_a_partition():
    history = [send("p0:0", 0, 1), send("p0:1", 0, 0, at=1.1),
               poll("r0", [(0, 0, "p0:1"), (0, 1, "p0:0")]), final([(0, 2)])]
    example = only(check(history), "reorder")[0]
    assert example["producer"] == "p0" and example["later"] == {"offset": 1, "sequence": 0}


def test_two_values_at_one_offset_is_divergence():
    history = clean_queue_history() + [send("p1:0", 0, None, status="info"), poll("r1", [(0, 1, "p1:0")], at=3)]
    example = only(check(history), "divergent")[0]
    assert example["offset"] == 1 and example["values"] == ["p0:1", "p1:0"]


def test_offsets_going_backwards_for_a_reader():
    history = clean_queue_history() + [poll("r0", [(0, 1, "p0:1")], at=3)]
    example = only(check(history), "nonmonotonic-poll")[0]
    assert example == {"process": "r0", "topic": T, "partition": 0, "after": 2, "got": 1, "at": 3}


def test_a_reassignment_lets_a_reader_read_again():
    history = clean_queue_history() + [
        {"f": "assign", "process": "r0", "time": 2.9, "end": 2.9, "partitions": [[T, 0]]},
        poll("r0", [(0, 1, "p0:1")], at=3)]
    assert check(history).valid


def commit(offset, at, status="ok", group="g"):
    return {"f": "commit", "process": "c0", "time": at - 0.1, "end": at, "group": group,
            "offsets": [[T, 0, offset]], "status": status}


def committed(offset, at, group="g"):
    return {"f": "committed", "process": "monitor", "time": at, "end": at + 0.05, "group": group,
            "offsets": [[T, 0, offset]]}


def test_committed_offset_regressing():
    history = [commit(5, 1.0), committed(5, 1.5), commit(8, 2.0), committed(6, 2.5)]
    example = only(check(history), "commit-regress")[0]
    assert example["committed"] == 8 and example["read_back"] == 6


def test_a_lower_commit_acknowledged_later_is_no_regression():
    history = [commit(8, 1.0), commit(3, 2.0), committed(3, 2.5)]
    assert check(history).valid


def test_a_read_back_invoked_before_the_commit_completed_may_see_the_older_offset():
    history = [commit(5, 1.0), commit(8, 2.0), committed(5, 1.95)]
    assert check(history).valid


def test_aborted_read():
    history = [txn("t1", "abort", [(0, "t0:0"), (1, "t0:1")]),
               poll("rc", [(0, 0, "t0:0")], at=4, isolation="read_committed"), final([(0, 1), (1, 0)])]
    assert only(check(history), "aborted-read")[0]["value"] == "t0:0"


def test_an_aborted_write_seen_read_uncommitted_is_allowed():
    history = [txn("t1", "abort", [(0, "t0:0")]), poll("ru", [(0, 0, "t0:0")], at=4)]
    assert check(history).valid


def test_uncommitted_read_under_read_committed():
    history = [txn("t1", "commit", [(0, "t0:0")], at=5.0, commit_time=4.5),
               poll("rc", [(0, 0, "t0:0")], at=4.0, isolation="read_committed")]
    assert only(check(history), "uncommitted-read")[0]["read_at"] == 4.0


def test_a_transaction_partly_visible():
    history = [txn("t1", "commit", [(0, "t0:0"), (1, "t0:1")]),
               poll("rc", [(0, 0, "t0:0")], at=4, isolation="read_committed"),
               final([(0, 1), (1, 2)], isolation="read_committed", process="rc")]
    example = only(check(history), "partial-txn")[0]
    assert example["visible"] == ["t0:0"] and example["missing"] == ["t0:1"]


def test_a_committed_transaction_wholly_invisible_is_lost():
    history = [txn("t1", "commit", [(0, "t0:0"), (1, "t0:1")]), final([(0, 1), (1, 2)], isolation="read_committed")]
    assert len(only(check(history), "lost")) == 2


def leader(epoch, node, isr, at, version=None):
    op = {"f": "leader", "process": "monitor", "time": at, "end": at, "topic": T, "partition": 0,
          "leader": node, "epoch": epoch, "isr": isr}
    if version is not None:
        op["version"] = version
    return op


def test_unclean_leader_election():
    history = [leader(0, 1, [1, 2, 3], 1), leader(0, 1, [1], 2), leader(1, 2, [2], 3)]
    example = only(check(history), "unclean-election")[0]
    assert example["leader"] == 2 and example["previous_isr"] == [1]


def test_a_clean_leader_change_and_an_unobserved_epoch_are_not_flagged():
    history = [leader(0, 1, [1, 2, 3], 1), leader(1, 2, [2, 3], 2), leader(3, 1, [1, 3], 3)]
    assert check(history).valid


def test_unclean_leader_election_between_consecutive_state_versions():
    history = [leader(1, 1, [1, 2], 1, version=4), leader(2, 3, [3], 2, version=5)]
    assert only(check(history), "unclean-election")[0]["previous_isr"] == [1, 2]


def test_an_isr_expansion_the_monitor_missed_is_no_unclean_election():
    # ISR [1, 2] -> [1, 2, 3] (version 5, not observed), then 3 elected (version 6).
    history = [leader(1, 1, [1, 2], 1, version=4), leader(2, 3, [1, 2, 3], 2, version=6)]
    assert check(history).valid


def test_every_class_has_a_test():
    tested = {"lost", "duplicate", "reorder", "divergent", "nonmonotonic-poll", "commit-regress", "aborted-read",
              "uncommitted-read", "partial-txn", "unclean-election", "share-redelivered", "share-lost"}
    assert tested == set(ANOMALY_CLASSES)


@pytest.mark.parametrize("value,order", [("p0:12", ("p0", 12)), ("a:b:3", ("a:b", 3)), ("x", None), (":1", None)])
def test_value_order(value, order):
    assert value_order(value) == order


def test_a_recorded_history_round_trips_through_its_file(tmp_path):
    recorder = HistoryRecorder(tmp_path / "h.jsonl")
    invoked = recorder.now()
    recorder.record("send", "p0", invoked, topic=T, partition=0, value="p0:0", status="ok", offset=0)
    recorder.close()
    again = read_history(tmp_path / "h.jsonl")
    assert again[0]["value"] == "p0:0" and again[0]["time"] <= again[0]["end"]
    write_history(tmp_path / "copy.jsonl", again)
    assert read_history(tmp_path / "copy.jsonl") == again


# -- share groups (the share workload) -------------------------------------------------------------------


def share_deliver(process, records, at):
    return {"f": "share-deliver", "process": process, "time": at - 0.1, "end": at, "group": "s",
            "records": [[T, p, o, v] for p, o, v in records]}


def share_accept(process, records, at, status="ok"):
    return {"f": "share-accept", "process": process, "time": at - 0.1, "end": at, "group": "s", "status": status,
            "records": [[T, p, o, v] for p, o, v in records]}


def share_final(start, lag, at=12.0):
    return {"f": "share-final", "process": "share-monitor", "time": at, "end": at, "group": "s",
            "offsets": [[T, 0, start, lag]]}


def clean_share_history():
    records = [(0, 0, "p0:0"), (0, 1, "p0:1"), (0, 2, "p0:2")]
    return [*clean_queue_history(), share_deliver("s0", records[:2], 3.0), share_accept("s0", records[:2], 3.5),
            share_deliver("s1", records[2:], 3.2), share_accept("s1", records[2:], 4.0, status="info"),
            share_final(3, 0)]


def test_a_clean_share_history_has_no_anomaly():
    report = check(clean_share_history())
    assert report.valid, report.summary()


def test_a_record_delivered_after_its_acceptance_was_confirmed():
    history = clean_share_history() + [share_deliver("s1", [(0, 1, "p0:1")], 5.0)]
    [example] = only(check(history), "share-redelivered")
    assert example["delivered_to"] == "s1" and example["record"] == [T, 0, 1, "p0:1"]


def test_a_record_delivered_again_before_the_acceptance_completed_is_no_anomaly():
    # A lock ran out and the record went to s1 while s0's commit was under way (it then fails: info).
    history = clean_share_history() + [share_deliver("s1", [(0, 0, "p0:0")], 3.45)]
    assert check(history).valid


def test_two_confirmed_acceptances_of_one_record():
    history = clean_share_history() + [share_accept("s1", [(0, 0, "p0:0")], 6.0)]
    assert only(check(history), "share-redelivered")[0]["accepted_again_by"] == "s1"


def test_a_record_never_delivered_to_the_share_group_is_lost():
    history = [op for op in clean_share_history() if not (op["f"] == "share-deliver" and op["process"] == "s1")]
    [example] = only(check(history), "share-lost")
    assert example["record"] == [T, 0, 2, "p0:2"]


def test_a_share_partition_left_with_records_in_flight_is_lost():
    history = clean_share_history()[:-1] + [share_final(2, 1)]
    [example] = only(check(history), "share-lost")
    assert (example["start_offset"], example["lag"], example["high_watermark"]) == (2, 1, 3)
