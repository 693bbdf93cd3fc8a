"""Rates and lag over time for the console's charts, sampled in the broker's event loop.

Every `console.sample.interval.ms` the sampler notes each topic's total log end offset (the
messages/s sparklines are its differences) and each consumer group's lag (log end offset minus
committed offset, summed over the group's partitions). It reads through the broker's public
interfaces the Kafka handlers use (cluster metadata, ListOffsets' `list_offset`, the group
coordinator's `list_groups` and `fetch_offsets`), cheap calls that touch no log file. What a user
is shown is filtered by the same ACLs as the rest of the console (console/api.py): a user sees the
rates of the topics their Metadata lists and the lag of the groups their ListGroups lists.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time

from broker import share_groups
from broker.workers.calls import end_offset
from broker.workers.link import RemoteFailure, WorkerGone
from coordinator.timer import stop_task
from kafka_wire.errors import ErrorCode

logger = logging.getLogger("kafka_wire.console")

# Samples kept per series: at the default 5 s interval, the last 10 minutes.
KEEP = 120


class Sampler:
    def __init__(self, broker, interval_ms: int) -> None:
        self.broker = broker
        self.interval = interval_ms / 1000
        # topic -> deque[(time, total log end offset)]
        self.topic_ends: dict[str, collections.deque] = {}
        # group -> deque[(time, total lag, {"topic:partition": lag})]
        self.group_lag: dict[str, collections.deque] = {}
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            await stop_task(self._task)
            self._task = None

    async def _run(self) -> None:
        while True:
            try:
                await self.sample()
            except Exception:
                logger.exception("console sampling failed")
            await asyncio.sleep(self.interval)

    async def _end_offsets(self, wanted: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """Log end offsets (high watermarks) of the partitions this broker leads; with several
        workers each partition's owner is asked (broker/workers/calls.py: end_offsets)."""
        workers = getattr(self.broker, "workers", None)
        here = None if workers is None else workers.index
        by_owner: dict[int | None, list[tuple[str, int]]] = {}
        for topic, partition in wanted:
            by_owner.setdefault(here if workers is None else workers.owner(topic, partition), []).append(
                (topic, partition))
        ends = {}
        for owner, partitions in by_owner.items():
            if owner == here:
                answers = [end_offset(self.broker, *tp) for tp in partitions]
            else:
                try:
                    answers, _, _ = await workers.links[owner].call("end_offsets", partitions)
                except (WorkerGone, RemoteFailure):  # that worker is gone: its partitions are left out
                    continue
            ends.update((tp, end) for tp, end in zip(partitions, answers) if end is not None)
        return ends

    async def sample(self) -> None:
        now = time.time()
        topics = self.broker.metadata.topics
        listed = list(topics.items())
        ends = await self._end_offsets([(name, p) for name, meta in listed for p in range(meta.partitions)])
        for name, meta in listed:
            total = sum(ends.get((name, partition), 0) for partition in range(meta.partitions))
            self.topic_ends.setdefault(name, collections.deque(maxlen=KEEP)).append((now, total))
        for name in list(self.topic_ends):
            if name not in topics:
                del self.topic_ends[name]
        self._sample_groups(now, ends)

    def _sample_groups(self, now: float, ends: dict[tuple[str, int], int]) -> None:
        groups = getattr(self.broker, "groups", None)  # as ListGroups and OffsetFetch find it
        if groups is None:
            return
        error, listed = groups.list_groups()
        if error != ErrorCode.NONE:
            return
        seen = set()
        for entry in listed:
            group_id = entry["group_id"]
            seen.add(group_id)
            error, offsets = groups.fetch_offsets(group_id=group_id, partitions=None)
            if error != ErrorCode.NONE:
                continue
            per_partition = {}
            for topic, partition, committed, _, _, partition_error in offsets:
                end = ends.get((topic, partition))
                if partition_error != ErrorCode.NONE or committed < 0 or end is None:
                    continue
                per_partition[f"{topic}:{partition}"] = max(end - committed, 0)
            self.group_lag.setdefault(group_id, collections.deque(maxlen=KEEP)).append(
                (now, sum(per_partition.values()), per_partition))
        seen |= self._sample_share_groups(now, ends)
        for group_id in list(self.group_lag):
            if group_id not in seen:
                del self.group_lag[group_id]

    def _sample_share_groups(self, now: float, ends: dict[tuple[str, int], int]) -> set[str]:
        """Share groups' lag (DescribeShareGroupOffsets' definition: the end offset less the start
        offset less the records acknowledged past it), for the share-partitions loaded here."""
        service = share_groups.loaded_service(self.broker)
        if service is None:
            return set()
        lag: dict[str, dict[str, int]] = {g: {} for g, group in service.coordinator.groups.items() if not group.dead}
        for key in list(service.partitions):
            group_id, topic_id, partition = key
            meta = self.broker.metadata.topic_by_id(topic_id)
            summary = share_groups.share_partition_summary(service, key, {})
            end = ends.get((meta.name, partition)) if meta is not None else None
            if group_id in lag and summary is not None and end is not None:
                start, _, complete = summary
                lag[group_id][f"{meta.name}:{partition}"] = max(0, end - start - complete)
        for group_id, per_partition in lag.items():
            self.group_lag.setdefault(group_id, collections.deque(maxlen=KEEP)).append(
                (now, sum(per_partition.values()), per_partition))
        return set(lag)

    # -- what the pages show --------------------------------------------------------------------

    def rates(self, topic: str) -> list[list[float]]:
        """[[time, messages/s], ...] between consecutive samples."""
        samples = list(self.topic_ends.get(topic, ()))
        out = []
        for (t0, e0), (t1, e1) in zip(samples, samples[1:]):
            if t1 > t0:
                out.append([round(t1, 3), round(max(e1 - e0, 0) / (t1 - t0), 3)])
        return out

    def lag(self, group_id: str) -> list[dict]:
        return [{"time": round(t, 3), "lag": total, "partitions": parts}
                for t, total, parts in self.group_lag.get(group_id, ())]
