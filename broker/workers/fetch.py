"""A Fetch whose partitions are owned by several workers.

The worker holding the client's connection keeps the fetch session (KIP-227) and answers; the
owners read. Reads go out to every owner at once, each partition limited by
min(partition_max_bytes, max_bytes) with at least one batch; the answers come back as log file
descriptors with a position and a length (SCM_RIGHTS over the worker link), so the record bytes are
sent to the client with sendfile and never pass through either process.

Kafka reads a fetch's partitions one after another: each is limited by what the earlier ones left
of max_bytes, and only until the first data is at least one batch returned whatever its size
(KIP-74). The answer is put together in that order here: partitions this worker owns are read then,
with the limit as it stands; another worker's read is cut to the whole batches that fit the limit
(reading the batch lengths from the file), or dropped when none fits and a batch was already
returned. What comes out is what one process reading in order returns.

A long-polling fetch waits on this worker's partitions here and asks each other owner to wait on
its own (`wait`): the owner answers at once when a partition already has data past the fetch
offset, else when an append wakes it or the time is up. The first answer ends the wait; the fetch
reads again.
"""

from __future__ import annotations

import asyncio
import os
import struct

from kafka_wire.errors import ErrorCode

from ..node import PartitionRead
from .link import RemoteFailure, WorkerGone
from .runtime import FdSlice

_ZERO_UUID_BYTES = bytes(16)
_BATCH_LENGTH = struct.Struct(">i")
_LOG_OVERHEAD = 12  # base offset (8) and batch length (4) before each batch's length counts


def remote_owners(broker, partitions, refused: dict) -> dict[int, list[int]]:
    """{owner: [indexes into partitions]} of the partitions other workers own (refused ones left out)."""
    workers = broker.workers
    owners: dict[int, list[int]] = {}
    for i, part in enumerate(partitions):
        if i in refused:
            continue
        owner = workers.owner(part.topic, part.partition)
        if owner != workers.index:
            owners.setdefault(owner, []).append(i)
    return owners


async def read_remote(broker, partitions, owners: dict[int, list[int]], *, max_bytes: int, read_committed: bool,
                      replica_id: int, reader: int | None = None) -> dict[int, PartitionRead]:
    """{index: PartitionRead} for the partitions other workers own, each read with at least one batch:
    by the owner, or here where the consumer on connection `reader` reads on from where the bytes it
    was sent ended (read_cursors.py)."""
    links = broker.workers.links
    cursors = broker.workers.cursors if replica_id < 0 and reader is not None else None
    results: dict[int, PartitionRead] = {}
    calls = {}
    asked = {}
    for owner, indexes in owners.items():
        if cursors is not None:
            rest = []
            for i in indexes:
                part = partitions[i]
                read = cursors.read(reader, part, max(0, min(part.partition_max_bytes, max_bytes)), read_committed)
                if read is None:
                    rest.append(i)
                else:
                    results[i] = read
            if not rest:
                continue
            indexes = rest
        asked[owner] = indexes
        reads = [(partitions[i].topic, partitions[i].topic_id, partitions[i].partition, partitions[i].fetch_offset,
                  max(0, min(partitions[i].partition_max_bytes, max_bytes)), partitions[i].current_leader_epoch)
                 for i in indexes]
        calls[owner] = asyncio.ensure_future(links[owner].call("read", (reads, read_committed, replica_id)))
    if not calls:
        return results
    await asyncio.wait(calls.values())
    for owner, call in calls.items():
        indexes = asked[owner]
        try:
            answers, _, fds = call.result()
        except (WorkerGone, RemoteFailure):
            for i in indexes:
                results[i] = PartitionRead(ErrorCode.KAFKA_STORAGE_ERROR)
            continue
        fds = iter(fds)
        for i, answer in zip(indexes, answers):
            error, high_watermark, last_stable, log_start, aborted, position, length, published = answer
            records = FdSlice(next(fds), position, length) if length else None
            results[i] = PartitionRead(ErrorCode(error), high_watermark, last_stable, log_start, records, aborted)
            if cursors is not None:
                if records is not None and published is not None:
                    cursors.remember(reader, partitions[i], owner, *published, records)
                elif error:
                    cursors.forget(reader, partitions[i].topic, partitions[i].partition)
    return results


def fit(read: PartitionRead, limit: int, min_one: bool) -> PartitionRead:
    """What reading the partition with `limit` (and `min_one`) would have returned, from a read
    made with a limit at least as large: its leading whole batches that fit, else the first one
    when min_one, else none."""
    records = read.records
    if records is None or len(records) <= limit:
        return read
    fd, position, length = records.fd, records.position, records.length
    end = 0
    while end + _LOG_OVERHEAD <= length:
        size = _LOG_OVERHEAD + _BATCH_LENGTH.unpack(os.pread(fd, 4, position + end + 8))[0]
        if end + size > limit:
            if end == 0 and min_one:
                end = size
            break
        end += size
    if end == 0:
        records.close()
        read.records = None
    else:
        records.length = end
    return read


def serve_reads(broker, meta) -> tuple:
    """The `read` call: each partition read as Fetch reads it; slices go back as descriptors."""
    reads, read_committed, replica_id = meta
    published_logs = broker.workers.published if replica_id < 0 else None
    answers = []
    fds = []
    for topic, topic_id, partition, offset, max_bytes, leader_epoch in reads:
        topic_meta = broker.metadata.topic(topic)
        if topic_meta is None or not 0 <= partition < topic_meta.partitions:
            read = PartitionRead(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        elif topic_id is not None and topic_id.bytes != _ZERO_UUID_BYTES and topic_meta.topic_id != topic_id:
            read = PartitionRead(ErrorCode.INCONSISTENT_TOPIC_ID)
        else:
            read = broker.read_partition(topic, partition, offset, max_bytes=max_bytes, min_one=True,
                                         read_committed=read_committed, current_leader_epoch=leader_epoch,
                                         replica_id=replica_id)
        position = length = 0
        published = None
        records = read.records
        if records is not None and len(records):
            fds.append(os.dup(records.fd))
            position, length = records.position, records.length
            plog = broker.partition_log(topic, partition) if published_logs is not None else None
            if plog is not None:
                # Where the caller may read on by itself (read_cursors.py): the slot publishing this
                # log, its incarnation and rewrite count, and the base offset of the first batch sent.
                slot, incarnation = published_logs.slot_of(plog)
                if slot >= 0:
                    published = (slot, incarnation, published_logs.rewrites(slot), records.first_offset)
        if records is not None:
            records.close()
        answers.append((int(read.error), read.high_watermark, read.last_stable_offset, read.log_start_offset,
                        read.aborted_transactions, position, length, published))
    return answers, b"", fds


async def wait_across(broker, partitions, watched_indexes, *, read_committed: bool, timeout: float) -> None:
    """Wait until an append reaches one of the watched partitions (here or at their owners) or the time is up."""
    workers = broker.workers
    local = []
    remote: dict[int, list] = {}
    for i in watched_indexes:
        part = partitions[i]
        owner = workers.owner(part.topic, part.partition)
        if owner == workers.index:
            local.append((part.topic, part.partition))
        else:
            remote.setdefault(owner, []).append((part.topic, part.partition, part.fetch_offset))
    waits = []
    if local:
        waits.append(asyncio.ensure_future(broker.waiters.wait(local, timeout)))
    for owner, parts in remote.items():
        waits.append(asyncio.ensure_future(workers.links[owner].call("wait", (parts, read_committed, timeout))))
    if not waits:
        return
    try:
        await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            if not wait.done():
                wait.cancel()
            elif not wait.cancelled():
                wait.exception()  # a worker gone ends the wait like data would: the read says what


async def serve_wait(broker, meta) -> tuple:
    """The `wait` call: at once when a partition has data past the fetch offset (or cannot be
    read), else until an append here wakes it or the time is up."""
    parts, read_committed, timeout = meta
    for topic, partition, offset in parts:
        plog = broker.partition_log(topic, partition)
        if plog is None:
            return True, b"", ()
        available = plog.last_stable_offset if read_committed else plog.high_watermark
        if available > offset or offset > plog.log_end_offset or offset < plog.log_start_offset:
            return True, b"", ()
    woken = await broker.waiters.wait([(topic, partition) for topic, partition, _ in parts], timeout)
    return woken, b"", ()
