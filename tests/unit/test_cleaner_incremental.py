"""The log cleaner's cost follows the dirty part, not the whole log: a segment of the clean head
that a new round would give back unchanged is left alone (Kafka rewrites it with the same bytes),
and an idle cleaner does not wait out its whole backoff once a log becomes cleanable.
librdkafka's 0077_compaction waits 20 s for compaction: rounds that rewrote the whole log every
time, after up to a 15 s backoff, made it flaky."""

from __future__ import annotations

import asyncio
import os

import pytest

from kafka_wire.record_codec import Record, build_batch, decode_batches
from log.log_manager import LogManager

NOW = 1_700_000_000_000
COMPACT = {"cleanup.policy": "compact", "segment.bytes": 2048, "min.cleanable.dirty.ratio": 0.01}


@pytest.fixture
def manager(tmp_path):
    logs = LogManager([str(tmp_path / "data")], clock_ms=lambda: NOW)
    logs.load()
    yield logs
    logs.close()


def append(log, key: bytes, value: bytes | None) -> None:
    log.append(bytearray(build_batch([Record(0, 0, key, value)], base_timestamp=NOW)), leader_epoch=0)
    log.high_watermark = log.log_end_offset


def records(log) -> list[tuple[bytes, bytes | None]]:
    """(key, value) of every record from the log start, as a consumer reads them."""
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        found = log.read_slice(offset, 1 << 20)
        if found is None:
            break
        with found:
            data = found.read_bytes()
        for header, batch in decode_batches(data):
            out += [(record.key, record.value) for record in batch]
            offset = header.next_offset
    return out


def table(log) -> dict[bytes, bytes]:
    out = dict(records(log))
    return {k: v for k, v in out.items() if v is not None}


def segment_files(log) -> dict[int, int]:
    """Base offset -> inode of each segment's .log file (a rewritten segment gets a new file)."""
    return {seg.base_offset: os.stat(seg.log_path).st_ino for seg in log.segments}


def test_a_second_round_leaves_untouched_clean_segments_alone(manager):
    log = manager.get_or_create("table", 0, COMPACT)
    for i in range(200):  # unique keys: the first round keeps them all
        append(log, b"unique-%03d" % i, b"v" * 40)
    for i in range(50):
        append(log, b"hot", b"h%d" % i)
    log.roll()
    manager.cleaner.clean_log(log)
    clean_head = {base: ino for base, ino in segment_files(log).items() if base < log.segments[-1].base_offset}

    for i in range(50):
        append(log, b"hot", b"again-%d" % i)
    log.roll()
    stats = manager.cleaner.clean_log(log)
    after = segment_files(log)
    untouched = [base for base, ino in clean_head.items() if after.get(base) == ino]
    # Every clean-head segment stays as it was but the one holding the old "hot" record and the
    # small ones the first round left at the end of the head (merged now, as Kafka merges them).
    assert len(untouched) >= len(clean_head) - 4, (clean_head, after)
    assert stats.records_read < 200
    expected = {b"unique-%03d" % i: b"v" * 40 for i in range(200)} | {b"hot": b"again-49"}
    assert table(log) == expected


def test_a_key_of_the_clean_head_updated_later_is_still_compacted(manager):
    log = manager.get_or_create("table", 0, COMPACT)
    for i in range(200):
        append(log, b"key-%03d" % i, b"old" * 10)
    log.roll()
    manager.cleaner.clean_log(log)
    for i in range(0, 200, 7):  # keys spread over the clean head come again, or are deleted
        append(log, b"key-%03d" % i, None if i % 2 else b"new")
    log.roll()
    manager.cleaner.clean_log(log)
    expected = {b"key-%03d" % i: b"old" * 10 for i in range(200) if i % 7}
    expected |= {b"key-%03d" % i: b"new" for i in range(0, 200, 14)}
    assert table(log) == expected
    live = [key for key, value in records(log) if value is not None]
    assert sorted(live) == sorted(expected), "a superseded record survived in the clean head"


def test_an_idle_cleaner_starts_before_its_backoff_ends_when_a_log_becomes_cleanable(manager):
    log = manager.get_or_create("table", 0, COMPACT)

    async def scenario() -> int:
        task = asyncio.create_task(manager.cleaner.run(True, backoff_ms=60_000))
        await asyncio.sleep(0.2)  # it found nothing to clean and backs off for a minute
        for i in range(100):
            append(log, b"same", b"v%d" % i + b"." * 40)
        log.roll()
        for _ in range(100):
            await asyncio.sleep(0.05)
            if len(records(log)) == 1:
                break
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return len(records(log))

    assert asyncio.run(scenario()) == 1, "the cleaner slept through its backoff with a cleanable log"
