"""The history a fault workload records: one operation per line, as JSON, in completion order.

Every operation has `f` (what it was), `process` (which client did it), `time` (seconds since the
run started, when it was invoked) and `end` (when it completed). The kinds (checker.py reads them):

    send      {"topic", "partition", "value", "status": "ok"|"fail"|"info", "offset" (ok only)}
              one record produced outside a transaction; ok = acknowledged (acks=all), fail =
              definitely not written (a non-retriable error before any attempt), info = unknown.
    poll      {"isolation": "read_uncommitted"|"read_committed", "records": [[topic, partition, offset, value]]}
              what one poll() returned to a consumer, in the order it returned them.
    assign    {"partitions": [[topic, partition]]}  a reader's assignment changed or it seeked:
              offsets it sees after this need not continue those before.
    commit    {"group", "offsets": [[topic, partition, offset]], "status"}  an offset commit.
    committed {"group", "offsets": [[topic, partition, offset]]}  committed offsets read back.
    txn       {"txn", "status": "commit"|"abort"|"info", "commit_time", "writes": [[topic, partition, value]]}
              one transaction; commit_time is when commit/abort was invoked.
    leader    {"topic", "partition", "leader", "epoch", "isr": [...]}  a partition state observed.
    final     {"isolation", "reached": [[topic, partition, high_watermark]]}  a reader drained these
              partitions to their high watermark after the faults healed.
    nemesis   {"name", "action": "start"|"heal", "detail"}  what the fault did, for the reader.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path


class HistoryRecorder:
    """Thread-safe: workload threads call `record()`; the operations are kept in memory and, when
    a path is given, appended to it as JSON lines as they complete (a crashed run leaves a history)."""

    def __init__(self, path: Path | None = None) -> None:
        self.started = time.monotonic()
        self.operations: list[dict] = []
        self._lock = threading.Lock()
        self._file = open(path, "w", encoding="utf-8") if path is not None else None

    def now(self) -> float:
        return round(time.monotonic() - self.started, 6)

    def record(self, f: str, process: str, invoked: float | None = None, **fields) -> dict:
        end = self.now()
        operation = {"f": f, "process": process, "time": end if invoked is None else invoked, "end": end, **fields}
        with self._lock:
            self.operations.append(operation)
            if self._file is not None:
                self._file.write(json.dumps(operation) + "\n")
                self._file.flush()
        return operation

    def count(self, f: str, **match) -> int:
        with self._lock:
            return sum(1 for op in self.operations
                       if op["f"] == f and all(op.get(k) == v for k, v in match.items()))

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def read_history(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def write_history(path: Path, operations: Iterable[dict]) -> None:
    with open(path, "w", encoding="utf-8") as out:
        for operation in operations:
            out.write(json.dumps(operation) + "\n")


def records_of(operations: Iterable[dict], isolation: str | None = None) -> Iterator[tuple[dict, list]]:
    """(poll operation, [topic, partition, offset, value]) for every record every poll returned."""
    for op in operations:
        if op["f"] == "poll" and (isolation is None or op.get("isolation") == isolation):
            for record in op["records"]:
                yield op, record
