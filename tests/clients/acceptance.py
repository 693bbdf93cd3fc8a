"""The client acceptance sequence's data and checks, shared by the Python-driven client programs.

Every client program (kafka-python, aiokafka, confluent-kafka, kcat; the Java and kafkajs programs
follow the same plan in their own language) does the same thing against a broker:

  create a topic through the client's admin API, produce records with every compression codec the
  client supports, read everything back with assign + seek to the beginning (no consumer group),
  check every key, value, header, timestamp and offset, list earliest / latest / by-timestamp
  offsets, delete the topic.

Every step and check names the features it exercises (FEATURES below). The program's last line is
`FEATURES-JSON: {"client": ..., "passed": ..., "features": {feature: "pass" | "fail"}}`, which
`kafka-wire compat` reads to fill its client x feature matrix; a feature absent from it did not run.

The plan fixes in advance which partition each record goes to and so which offset it must get,
because the records are produced codec by codec, with a flush in between, into a new topic.
Record `index` runs over all codecs; partition = index % partitions; timestamp = base + index.
The first record of each codec has a null key (clients must carry null keys through).

This module is imported by programs run as scripts from this folder (`python kafka_python_check.py
BOOTSTRAP`), so it imports nothing of the project and nothing outside the standard library.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import traceback
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

ALL_CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
# The features of the compatibility matrix (compat/matrix.py has the same list), as the programs in
# every language name them in their FEATURES-JSON line.
FEATURES = ("metadata", *(f"produce:{codec}" for codec in ALL_CODECS), "fetch", "list-offsets", "admin",
            "groups", "idempotence", "transactions", "sasl")
FEATURES_LINE_PREFIX = "FEATURES-JSON: "
DEFAULT_RECORDS_PER_CODEC = 40
DEFAULT_PARTITIONS = 2
# Record timestamps start ten minutes in the past: inside any broker's accepted window
# (Kafka 4 rejects timestamps more than an hour in the future) and unlike "now", so a broker
# that stamps its own time instead of keeping CreateTime is caught.
BASE_TIMESTAMP_LAG_MS = 10 * 60 * 1000


class CheckFailed(Exception):
    """A client saw something Apache Kafka would not have shown it."""


@dataclass(frozen=True)
class PlannedRecord:
    index: int
    codec: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes
    headers: tuple[tuple[str, bytes], ...]
    timestamp: int | None  # None when the client cannot set a record's timestamp (kcat)


@dataclass(frozen=True)
class ReceivedRecord:
    """What a consumer handed back, normalised across clients."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp: int


class AcceptancePlan:
    """Which records a client produces, where they must land, and what it must read back."""

    def __init__(
        self,
        client: str,
        codecs: Iterable[str],
        records_per_codec: int = DEFAULT_RECORDS_PER_CODEC,
        partitions: int = DEFAULT_PARTITIONS,
        explicit_timestamps: bool = True,
        index_header: bool = True,
        topic: str | None = None,
    ):
        self.client = client
        self.codecs = tuple(codecs)
        self.partitions = partitions
        self.topic = topic or f"check-{client}-{uuid.uuid4().hex[:10]}"
        self.base_timestamp = (
            int(time.time() * 1000) - BASE_TIMESTAMP_LAG_MS if explicit_timestamps else None
        )
        self.records: list[PlannedRecord] = []
        next_offset = [0] * partitions
        for codec_number, codec in enumerate(self.codecs):
            for i in range(records_per_codec):
                index = codec_number * records_per_codec + i
                partition = index % partitions
                headers = [("codec", codec.encode())]
                if index_header:
                    headers.append(("index", str(index).encode()))
                self.records.append(
                    PlannedRecord(
                        index=index,
                        codec=codec,
                        partition=partition,
                        offset=next_offset[partition],
                        key=None if i == 0 else f"key-{codec}-{i}".encode(),
                        # Repetitive on purpose, so the codecs really compress.
                        value=(f"value {codec} {index} " * (8 + i % 5)).encode(),
                        headers=tuple(headers),
                        timestamp=None if self.base_timestamp is None else self.base_timestamp + index,
                    )
                )
                next_offset[partition] += 1
        self.log_end_offsets = {p: next_offset[p] for p in range(partitions)}

    def for_codec(self, codec: str) -> list[PlannedRecord]:
        return [r for r in self.records if r.codec == codec]

    @property
    def total(self) -> int:
        return len(self.records)

    def timestamp_probe(self) -> tuple[int, dict[int, int]]:
        """A timestamp in the middle of the data and, per partition, the offset a ListOffsets
        for it must return: the first record whose timestamp is >= it."""
        assert self.base_timestamp is not None
        target = self.base_timestamp + self.total // 2 + 1
        expected = {}
        for p in range(self.partitions):
            hits = [r.offset for r in self.records if r.partition == p and r.timestamp >= target]
            expected[p] = hits[0] if hits else -1
        return target, expected

    def timestamp_after_last(self) -> int:
        """A timestamp later than every record: ListOffsets answers offset -1 (no such record)."""
        assert self.base_timestamp is not None
        return self.base_timestamp + self.total + 60_000

    def check_delivery(self, record: PlannedRecord, partition: int, offset: int) -> None:
        """A producer's acknowledgement must name the partition and offset the plan predicts."""
        if (partition, offset) != (record.partition, record.offset):
            raise CheckFailed(
                f"record {record.index} ({record.codec}) acked at partition {partition} offset {offset}, "
                f"expected partition {record.partition} offset {record.offset}"
            )

    def check_received(self, received: Iterable[ReceivedRecord]) -> None:
        """Everything produced, read back exactly: same offsets, no gaps, no extras."""
        by_position = {(r.partition, r.offset): r for r in self.records}
        seen: set[tuple[int, int]] = set()
        problems: list[str] = []
        for got in received:
            position = (got.partition, got.offset)
            want = by_position.get(position)
            if want is None:
                problems.append(f"unexpected record at partition {got.partition} offset {got.offset}")
                continue
            if position in seen:
                problems.append(f"record at partition {got.partition} offset {got.offset} delivered twice")
            seen.add(position)
            where = f"partition {got.partition} offset {got.offset} (record {want.index}, {want.codec})"
            if got.key != want.key:
                problems.append(f"{where}: key {got.key!r}, expected {want.key!r}")
            if got.value != want.value:
                problems.append(f"{where}: value {_short(got.value)}, expected {_short(want.value)}")
            if tuple(got.headers) != want.headers:
                problems.append(f"{where}: headers {got.headers!r}, expected {want.headers!r}")
            if want.timestamp is not None and got.timestamp != want.timestamp:
                problems.append(f"{where}: timestamp {got.timestamp}, expected {want.timestamp}")
        missing = sorted(set(by_position) - seen)
        if missing:
            problems.append(f"{len(missing)} records never read back, first at partition/offset {missing[0]}")
        if problems:
            shown = "\n  ".join(problems[:20])
            more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
            raise CheckFailed(f"read-back mismatch ({len(problems)} problems):\n  {shown}{more}")

    def check_offsets(self, what: str, got: dict[int, int], want: dict[int, int]) -> None:
        if got != want:
            raise CheckFailed(f"{what}: got {dict(sorted(got.items()))}, expected {dict(sorted(want.items()))}")


def _short(value: bytes | None) -> str:
    if value is None:
        return "None"
    return repr(value[:40]) + (f"...({len(value)} bytes)" if len(value) > 40 else "")


class Progress:
    """Prints each step as it runs, so a failing run shows how far it got.

    `step` is for what later steps depend on (connect, create, produce): a failure ends the run.
    `check` is for a verification that later steps do not need: a failure is recorded and the run
    goes on, so one run reports every check that fails, not only the first.
    Both take the features (see FEATURES) the step exercises: a feature passes when every step
    naming it passed, fails when one failed, and is absent when none ran.
    """

    def __init__(self, client: str):
        self.client = client
        self.started = time.monotonic()
        self.failures: list[str] = []
        self.features: dict[str, str] = {}

    def say(self, message: str) -> None:
        print(f"[{self.client}] {message}", flush=True)

    def record(self, features: Iterable[str], passed: bool) -> None:
        for feature in features:
            if feature not in FEATURES:
                raise ValueError(f"unknown feature {feature!r}")
            if not passed:
                self.features[feature] = "fail"
            else:
                self.features.setdefault(feature, "pass")

    @contextlib.contextmanager
    def step(self, name: str, features: Iterable[str] = ()) -> Iterator[None]:
        self.say(f"{name} ...")
        began = time.monotonic()
        try:
            yield
        except BaseException:
            self.record(features, passed=False)
            raise
        self.record(features, passed=True)
        self.say(f"{name}: ok ({time.monotonic() - began:.2f}s)")

    @contextlib.contextmanager
    def check(self, name: str, features: Iterable[str] = ()) -> Iterator[None]:
        self.say(f"{name} ...")
        began = time.monotonic()
        try:
            yield
        except CheckFailed as failure:
            self.say(f"{name}: FAILED: {failure}")
            self.failures.append(f"{name}: {failure}")
            self.record(features, passed=False)
        except Exception as error:  # noqa: BLE001 - reported, and the run still fails
            self.say(f"{name}: FAILED with {type(error).__name__}: {error}")
            traceback.print_exc(file=sys.stdout)
            self.failures.append(f"{name}: {type(error).__name__}: {error}")
            self.record(features, passed=False)
        else:
            self.record(features, passed=True)
            self.say(f"{name}: ok ({time.monotonic() - began:.2f}s)")

    def features_line(self) -> str:
        summary = {"client": self.client, "passed": not self.failures,
                   "features": {f: self.features[f] for f in FEATURES if f in self.features}}
        return FEATURES_LINE_PREFIX + json.dumps(summary, sort_keys=False)


def wait_until(condition, timeout: float, what: str, interval: float = 0.2):
    """Polls condition() until it returns a truthy value; CheckFailed naming `what` on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise CheckFailed(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def argument_parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("bootstrap", help="bootstrap server, host:port")
    parser.add_argument("--records", type=int, default=DEFAULT_RECORDS_PER_CODEC, help="records per codec")
    parser.add_argument(
        "--codecs", default=",".join(ALL_CODECS), help="comma-separated codecs to produce with (default: all)"
    )
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds any one step may take")
    return parser


def run_program(client: str, body) -> None:
    """Runs body(progress); exits 0 when every check passed, 1 otherwise, saying why."""
    progress = Progress(client)
    try:
        body(progress)
    except CheckFailed as failure:
        progress.failures.append(str(failure))
        progress.say(f"FAILED: {failure}")
    except BaseException as error:
        progress.failures.append(f"{type(error).__name__}: {error}")
        progress.say("FAILED with an exception:")
        traceback.print_exc(file=sys.stdout)
    elapsed = time.monotonic() - progress.started
    if progress.failures:
        progress.say(f"{len(progress.failures)} CHECK(S) FAILED ({elapsed:.1f}s):")
        for failure in progress.failures:
            progress.say(f"  - {failure.splitlines()[0]}")
        print(progress.features_line(), flush=True)
        os._exit(1)  # a client's background threads must not keep a failed run alive
    progress.say(f"ALL CHECKS PASSED ({elapsed:.1f}s)")
    print(progress.features_line(), flush=True)
    sys.exit(0)
