"""Finds the anomalies in a recorded fault history (history.py describes the operations).

Values are unique per run and spelled `<producer>:<sequence>` (a producer's sequence numbers rise
with every record it sends to a partition), so a value says who wrote it and in which order.

The anomaly classes, each a key of `Report.anomalies` with a list of examples:

    lost              an acknowledged write (send ok, or a write of a committed transaction) missing from
                      the final read of its partition after the faults (a reader that drained it to its
                      high watermark), also when some reader saw it before (the log lost it later);
                      without a final read: one that no reader saw below an offset some reader saw.
    duplicate         one value at two different offsets (or partitions).
    reorder           a producer's values appear in a partition out of the order it sent them.
    divergent         two different values read at one (topic, partition, offset): replicas diverged.
    nonmonotonic-poll a reader got an offset at or below one it got before from that partition, with
                      no reassignment or seek (assign) between.
    commit-regress    a group's committed offset, read back after a commit was acknowledged, is lower
                      than that commit (and no lower commit was acknowledged in between).
    aborted-read      a read_committed reader saw a write of an aborted transaction.
    uncommitted-read  a read_committed reader saw a transaction's write before its commit was invoked.
    partial-txn       some but not all writes of a committed transaction are visible to read_committed
                      readers after a full drain.
    share-redelivered a share group (KIP-932) delivered a record again after a share consumer's
                      acceptance of it was confirmed (its commit answered without error), or two
                      consumers' acceptances of one record were both confirmed.
    share-lost        a record the final read found that no share consumer of the group was ever
                      given, or a partition whose share-partition, after the faults and after the
                      consumers had time to accept everything, still has records in flight (its
                      start offset short of the high watermark the final read reached, or a lag).
    unclean-election  a partition's leader for epoch e+1 was not in the ISR last observed in epoch e,
                      where no write of the state came between the two observations (`version`, the
                      state znode's version, rose by one; histories without versions: epochs only).

What is not an anomaly: writes whose outcome is unknown (send info, txn info) appearing once or not
at all; a group consumer re-reading after a rebalance (at-least-once); gaps in offsets (control
records, aborted batches).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable

from .history import records_of

ANOMALY_CLASSES = ("lost", "duplicate", "reorder", "divergent", "nonmonotonic-poll", "commit-regress",
                   "aborted-read", "uncommitted-read", "partial-txn", "unclean-election", "share-redelivered",
                   "share-lost")
EXAMPLES_KEPT = 20


def value_order(value: str) -> tuple[str, int] | None:
    """(producer, sequence) of a value `<producer>:<sequence>`; None for anything else."""
    producer, _, sequence = str(value).rpartition(":")
    if not producer or not sequence.isdigit():
        return None
    return producer, int(sequence)


@dataclasses.dataclass
class Report:
    operations: int
    acknowledged: int          # sends acked + writes of committed transactions
    read: int                  # distinct values read
    unknown: int               # writes whose outcome is unknown (info)
    unchecked: int             # acknowledged writes no drain or later offset lets us judge
    anomalies: dict[str, list] = dataclasses.field(default_factory=dict)
    counts: dict[str, int] = dataclasses.field(default_factory=dict)

    @property
    def anomaly_count(self) -> int:
        return sum(self.counts.values())

    @property
    def valid(self) -> bool:
        return self.anomaly_count == 0

    def summary(self) -> str:
        found = ", ".join(f"{name} {n}" for name, n in self.counts.items() if n) or "none"
        return (f"{self.operations} operations, {self.acknowledged} acknowledged writes, {self.read} values read, "
                f"{self.unknown} unknown, {self.unchecked} unchecked; anomalies: {found}")


class _Found:
    def __init__(self) -> None:
        self.examples: dict[str, list] = {name: [] for name in ANOMALY_CLASSES}
        self.counts: dict[str, int] = {name: 0 for name in ANOMALY_CLASSES}

    def add(self, name: str, example: dict) -> None:
        self.counts[name] += 1
        if len(self.examples[name]) < EXAMPLES_KEPT:
            self.examples[name].append(example)


def check(operations: Iterable[dict]) -> Report:
    operations = sorted(operations, key=lambda op: (op.get("end", 0), op.get("time", 0)))
    found = _Found()

    # Where every value was read: value -> set of (topic, partition, offset); (tp, offset) -> values.
    value_places: dict[str, set] = defaultdict(set)
    offset_values: dict[tuple, set] = defaultdict(set)
    max_offset_seen: dict[tuple, int] = defaultdict(lambda: -1)
    read_committed_seen: dict[str, float] = {}  # value -> earliest end of a read_committed poll with it
    for op, (topic, partition, offset, value) in records_of(operations):
        tp = (topic, partition)
        value_places[value].add((topic, partition, offset))
        offset_values[(tp, offset)].add(value)
        max_offset_seen[tp] = max(max_offset_seen[tp], offset)
        if op.get("isolation") == "read_committed":
            read_committed_seen[value] = min(read_committed_seen.get(value, op["end"]), op["end"])

    drained: dict[tuple, int] = {}
    drainers = set()
    for op in operations:
        if op["f"] == "final":
            drainers.add(op["process"])
            for topic, partition, high_watermark in op["reached"]:
                drained[(topic, partition)] = max(drained.get((topic, partition), -1), high_watermark)
    # What the final reads found in each partition (the log as it is after the faults).
    finally_read: dict[tuple, set] = defaultdict(set)
    for op, (topic, partition, offset, value) in records_of(operations):
        if op["process"] in drainers:
            finally_read[(topic, partition)].add(value)

    # -- writes: lost ------------------------------------------------------------------------------
    acknowledged = unknown = unchecked = 0

    def judge_unseen(value, tp, offset, what: dict) -> None:
        nonlocal unchecked
        if tp in drained:
            if value not in finally_read[tp]:
                found.add("lost", {**what, "read_before": value in value_places})
        elif value in value_places:
            return
        elif offset is not None and offset < max_offset_seen[tp]:
            found.add("lost", what)
        else:
            unchecked += 1

    for op in operations:
        if op["f"] == "send":
            if op["status"] == "ok":
                acknowledged += 1
                tp = (op["topic"], op["partition"])
                judge_unseen(op["value"], tp, op.get("offset"),
                             {"value": op["value"], "topic": op["topic"], "partition": op["partition"],
                              "offset": op.get("offset"), "acked_at": op["end"], "process": op["process"]})
            elif op["status"] == "info":
                unknown += 1
        elif op["f"] == "txn":
            writes = op["writes"]
            if op["status"] == "commit":
                acknowledged += len(writes)
                visible = [w for w in writes if w[2] in read_committed_seen]
                all_drained = all((t, p) in drained for t, p, _ in writes)
                if not visible:
                    for topic, partition, value in writes:
                        judge_unseen(value, (topic, partition), None,
                                     {"value": value, "topic": topic, "partition": partition, "txn": op["txn"],
                                      "committed_at": op["end"], "process": op["process"]})
                elif len(visible) < len(writes) and all_drained:
                    found.add("partial-txn", {"txn": op["txn"], "process": op["process"],
                                              "visible": [w[2] for w in visible],
                                              "missing": [w[2] for w in writes if w[2] not in read_committed_seen]})
                commit_time = op.get("commit_time")
                if commit_time is not None:
                    for topic, partition, value in writes:
                        seen_at = read_committed_seen.get(value)
                        if seen_at is not None and seen_at < commit_time:
                            found.add("uncommitted-read", {"value": value, "txn": op["txn"], "read_at": seen_at,
                                                           "commit_invoked_at": commit_time})
            elif op["status"] == "abort":
                for topic, partition, value in op["writes"]:
                    if value in read_committed_seen:
                        found.add("aborted-read", {"value": value, "txn": op["txn"], "topic": topic,
                                                   "partition": partition, "read_at": read_committed_seen[value]})
            else:
                unknown += len(op["writes"])
                commit_time = op.get("commit_time")
                for topic, partition, value in op["writes"]:
                    seen_at = read_committed_seen.get(value)
                    if seen_at is not None and (commit_time is None or seen_at < commit_time):
                        found.add("uncommitted-read", {"value": value, "txn": op["txn"], "read_at": seen_at,
                                                       "commit_invoked_at": commit_time})

    # -- what the log holds: duplicates, divergence, order -----------------------------------------
    for value, places in value_places.items():
        if len(places) > 1:
            found.add("duplicate", {"value": value, "at": sorted(places)})
    for (tp, offset), values in offset_values.items():
        if len(values) > 1:
            found.add("divergent", {"topic": tp[0], "partition": tp[1], "offset": offset, "values": sorted(values)})

    first_place = {value: min(places) for value, places in value_places.items()}
    by_partition: dict[tuple, list] = defaultdict(list)
    for value, (topic, partition, offset) in first_place.items():
        by_partition[(topic, partition)].append((offset, value))
    for tp, entries in by_partition.items():
        last: dict[str, tuple[int, int]] = {}
        for offset, value in sorted(entries):
            order = value_order(value)
            if order is None:
                continue
            producer, sequence = order
            if producer in last and sequence < last[producer][1]:
                found.add("reorder", {"topic": tp[0], "partition": tp[1], "producer": producer,
                                      "earlier": {"offset": last[producer][0], "sequence": last[producer][1]},
                                      "later": {"offset": offset, "sequence": sequence}})
            last[producer] = (offset, sequence)

    # -- readers: offsets going backwards ----------------------------------------------------------
    position: dict[tuple, int] = {}
    for op in operations:
        if op["f"] == "assign":
            for key in [k for k in position if k[0] == op["process"]]:
                del position[key]
        elif op["f"] == "poll":
            for topic, partition, offset, value in op["records"]:
                key = (op["process"], topic, partition)
                if key in position and offset <= position[key]:
                    found.add("nonmonotonic-poll", {"process": op["process"], "topic": topic, "partition": partition,
                                                    "after": position[key], "got": offset, "at": op["end"]})
                position[key] = offset

    # -- committed offsets ---------------------------------------------------------------------------
    # The floor of a group's partition is its last acknowledged commit; a read-back invoked after that
    # commit completed must not be lower, unless a lower commit was acknowledged in between.
    floor: dict[tuple, tuple[int, float]] = {}
    events = [op for op in operations if op["f"] in ("commit", "committed")]
    timeline = sorted([(op["end"], 0, op) for op in events if op["f"] == "commit" and op["status"] == "ok"]
                      + [(op["time"], 1, op) for op in events if op["f"] == "committed"],
                      key=lambda item: (item[0], item[1]))
    for _, _, op in timeline:
        for topic, partition, offset in op["offsets"]:
            key = (op["group"], topic, partition)
            if op["f"] == "commit":
                floor[key] = (offset, op["end"])
            elif key in floor and offset < floor[key][0]:
                found.add("commit-regress", {"group": op["group"], "topic": topic, "partition": partition,
                                             "committed": floor[key][0], "committed_at": floor[key][1],
                                             "read_back": offset, "read_at": op["time"]})

    _check_share_groups(operations, found, drainers)

    # -- leaders ---------------------------------------------------------------------------------------
    # An ISR that grew and a leader elected from it between two observations look like an unclean
    # election; the state znode's version says whether a write was missed in between.
    last_seen: dict[tuple, dict] = {}
    for op in operations:
        if op["f"] != "leader" or op["epoch"] < 0:
            continue
        tp = (op["topic"], op["partition"])
        previous = last_seen.get(tp)
        consecutive = previous is not None and op["epoch"] == previous["epoch"] + 1 and (
            op.get("version") is None or previous.get("version") is None
            or op["version"] == previous["version"] + 1)
        if consecutive and op["leader"] >= 0 and op["leader"] not in previous["isr"]:
            found.add("unclean-election", {"topic": tp[0], "partition": tp[1], "epoch": op["epoch"],
                                           "leader": op["leader"], "previous_isr": previous["isr"], "at": op["end"]})
        if previous is None or op["epoch"] >= previous["epoch"]:
            last_seen[tp] = op

    return Report(operations=len(operations), acknowledged=acknowledged, read=len(value_places),
                  unknown=unknown, unchecked=unchecked,
                  anomalies={k: v for k, v in found.examples.items() if v}, counts=found.counts)


def _check_share_groups(operations: list[dict], found: _Found, drainers: set) -> None:
    """share-redelivered and share-lost, from what share consumers were given (`share-deliver`),
    which acceptances were confirmed (`share-accept` ok; info is an acceptance whose outcome is
    unknown), the final read, and the share-partitions' state read after the run (`share-final`)."""
    accepted: dict[tuple, tuple[float, str]] = {}
    for op in operations:
        if op["f"] == "share-accept" and op["status"] == "ok":
            for topic, partition, offset, value in op["records"]:
                key = (topic, partition, offset)
                if key in accepted:
                    found.add("share-redelivered", {"record": [topic, partition, offset, value],
                                                    "accepted_by": accepted[key][1], "accepted_at": accepted[key][0],
                                                    "accepted_again_by": op["process"], "at": op["end"]})
                else:
                    accepted[key] = (op["end"], op["process"])
    delivered: set[tuple] = set()
    for op in operations:
        if op["f"] != "share-deliver":
            continue
        for topic, partition, offset, value in op["records"]:
            key = (topic, partition, offset)
            delivered.add(key)
            # A poll invoked after the acceptance was confirmed: the broker handed the record out again.
            if key in accepted and op["time"] > accepted[key][0]:
                found.add("share-redelivered", {"record": [topic, partition, offset, value],
                                                "accepted_by": accepted[key][1], "accepted_at": accepted[key][0],
                                                "delivered_to": op["process"], "poll_invoked_at": op["time"]})
    finals = [op for op in operations if op["f"] == "share-final"]
    if not finals:
        return
    shared_topics = {topic for op in finals for topic, *_ in op["offsets"]}
    reached: dict[tuple, int] = {}
    for op in operations:
        if op["f"] == "final":
            for topic, partition, high_watermark in op["reached"]:
                reached[(topic, partition)] = high_watermark
    for op, (topic, partition, offset, value) in records_of(operations):
        if op["process"] in drainers and topic in shared_topics and (topic, partition, offset) not in delivered:
            found.add("share-lost", {"record": [topic, partition, offset, value], "never": "delivered"})
    for topic, partition, start_offset, lag in finals[-1]["offsets"]:
        high_watermark = reached.get((topic, partition))
        if high_watermark is not None and (max(start_offset, 0) < high_watermark or lag > 0):
            found.add("share-lost", {"topic": topic, "partition": partition, "start_offset": start_offset,
                                     "lag": lag, "high_watermark": high_watermark, "never": "accepted"})
