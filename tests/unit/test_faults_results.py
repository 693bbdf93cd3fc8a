"""The fault harness's stored results (compat/faults/run.py): what a run stores, what --resume keeps,
and compat/FAULTS.md rendered from every stored result."""

from __future__ import annotations

import json

from compat.faults.checker import check
from compat.faults.run import (RunResult, covers, failed, load_results, render, result_record, store_result)


def record(nemesis="kill-leader", workload="queue", seconds=300.0, **changes) -> dict:
    result = RunResult(nemesis, workload, seconds, report=check([]), faults=3, drained=True)
    for name, value in changes.items():
        setattr(result, name, value)
    return result_record(result, "abc123")


def test_a_stored_result_is_read_back_by_nemesis_and_workload(tmp_path):
    stored = record()
    path = store_result(tmp_path, stored)
    assert path.name == "kill-leader-queue.json"
    assert load_results(tmp_path) == {("kill-leader", "queue"): stored}
    assert stored["commit"] == "abc123" and stored["seconds"] == 300.0 and stored["faults"] == 3
    assert set(stored["anomalies"]) >= {"lost", "duplicate", "partial-txn"}
    # Unknown names and files that are not results are left out; a newer run replaces the old one.
    (tmp_path / "gone-queue.json").write_text(json.dumps({**stored, "nemesis": "gone"}))
    (tmp_path / "broken.json").write_text("{")
    store_result(tmp_path, {**stored, "faults": 5})
    assert load_results(tmp_path)[("kill-leader", "queue")]["faults"] == 5
    assert len(load_results(tmp_path)) == 1


def test_resume_keeps_only_long_enough_runs_without_harness_error():
    assert covers(record(seconds=300.0), 300.0)
    assert covers(record(seconds=600.0), 300.0)
    assert not covers(record(seconds=20.0), 300.0)
    assert not covers(record(error="RuntimeError('ip netns add')"), 300.0)
    assert not covers(record(skipped="no sch_netem"), 300.0)
    assert not covers(None, 300.0)
    # A run that found anomalies is a result: kept.
    found = record()
    found["anomalies"]["lost"] = 2
    assert covers(found, 300.0) and failed(found)


def test_the_table_is_rendered_from_all_stored_results(tmp_path):
    store_result(tmp_path, record("kill-leader", "queue", 300.0))
    store_result(tmp_path, record("pause-leader", "txn", 20.0))
    lost = record("power-loss-all-page-cache", "queue", 300.0)
    lost["anomalies"]["lost"] = 7  # documented Kafka behaviour under this nemesis
    lost["examples"] = {"lost": [{"value": "p0:1"}]}
    store_result(tmp_path, lost)
    store_result(tmp_path, record("delay", "queue", 300.0, skipped="no way to delay here"))
    (tmp_path / "NOTES.md").write_text("## Notes\n\nA diagnosis.\n")
    text = render(load_results(tmp_path), tmp_path)
    lines = text.strip().splitlines()
    assert lines[-1] == "faults: 3 runs, 7 anomalies"
    assert "Of the 7 anomalies, 0 are not Kafka's documented behaviour under their nemesis" in text
    row = next(line for line in lines if line.startswith("| kill-leader | queue |"))
    assert [c.strip() for c in row.split("|")][3:12] == ["3", "0", "0", "0", "yes", "none", "300",
                                                         row.split("|")[10].strip(), "abc123"]
    assert any(line.startswith("| pause-leader | txn |") and "| 20 |" in line for line in lines)
    assert "lost 7 (documented Kafka behaviour)" in text and '"p0:1"' in text
    assert "| delay | queue | skipped: no way to delay here |" in text
    assert "2 of them of at least 300 s" in text
    assert "Not run yet (65):" in text and "kill-leader x txn" in text
    assert "A diagnosis." in text


def test_a_power_loss_of_the_only_in_sync_replica_documents_what_it_loses():
    """power-loss-leader documents nothing of its own, but a run whose victim was the only in-sync
    replica of a partition when its power went with acknowledgements from the page cache (the
    nemesis adds the data-loss anomalies then) stores that, and its losses are not failures; with
    the durable default or fsync, nothing is excused."""
    plain = record("power-loss-leader", "txn")
    plain["anomalies"]["lost"] = 3
    assert failed(plain)
    alone = record("power-loss-leader", "txn", expected_anomalies={"lost", "divergent", "aborted-read"})
    alone["anomalies"].update(lost=3, divergent=2, **{"aborted-read": 1})
    assert not failed(alone)
    assert "lost 3 (documented Kafka behaviour)" in render({("power-loss-leader", "txn"): alone})
    alone["anomalies"]["uncommitted-read"] = 1
    assert failed(alone)
    # The class's own documented anomalies hold for records stored before they were widened.
    every = record("power-loss-all-page-cache", "txn")
    every.pop("expected_anomalies")
    every["anomalies"].update(lost=5, **{"partial-txn": 1})
    assert not failed(every)
    assert failed({**record("power-loss-all-fsync", "txn"), "anomalies": {"lost": 1}})
    # The default acknowledges only what is fsynced (log.flush.on.ack): a loss is a failure.
    assert failed({**record("power-loss-all", "txn"), "anomalies": {"lost": 1}})
    assert failed({**record("power-loss-all", "queue"), "anomalies": {"commit-regress": 1}})
