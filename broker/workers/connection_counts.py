"""Kafka's connection quotas (max.connections, max.connections.per.ip[.overrides]) for the whole
broker when its connections are spread over several workers: the counts live in memory shared by
the workers (made by the supervisor before forking) and change under one lock, so the second
connection from an address is refused whichever worker the kernel gives it to.

The table holds the total and, per client address, its count in open addressing (an address's
slot is found from a hash of it, then the next slots): an address keeps its slot while the broker
runs, a slot whose count fell to 0 is taken by the next new address. SLOTS addresses at once is
the most it tracks; past that a new address is counted in the total only.
"""

from __future__ import annotations

import hashlib
import mmap
import multiprocessing
import struct

SLOTS = 16384
_SLOT = struct.Struct("=Qq")  # address hash (0: never used), connections
_TOTAL = struct.Struct("=q")


class SharedConnectionCounts:
    def __init__(self) -> None:
        self._map = mmap.mmap(-1, _TOTAL.size + SLOTS * _SLOT.size)
        self._lock = multiprocessing.get_context("fork").Lock()

    @staticmethod
    def _key(host: str) -> int:
        return int.from_bytes(hashlib.blake2b(host.encode(), digest_size=8).digest(), "little") or 1

    def _find(self, key: int, create: bool) -> int | None:
        """The slot of `key`; with `create`, a free one when it has none (None: table full)."""
        free = None
        start = key % SLOTS
        for i in range(SLOTS):
            slot = (start + i) % SLOTS
            held, count = _SLOT.unpack_from(self._map, _TOTAL.size + slot * _SLOT.size)
            if held == key:
                return slot
            if held == 0:
                return (free if free is not None else slot) if create else None
            if count == 0 and free is None:
                free = slot
        return free if create else None

    def open(self, host: str, per_ip_limit: int, total_limit: int) -> str | None:
        """Count a new connection from `host`; why it must be refused, or None."""
        key = self._key(host)
        with self._lock:
            (total,) = _TOTAL.unpack_from(self._map, 0)
            slot = self._find(key, create=True)
            count = 0 if slot is None else _SLOT.unpack_from(self._map, _TOTAL.size + slot * _SLOT.size)[1]
            if count >= per_ip_limit:
                return f"{host} already has {count} connections (max.connections.per.ip={per_ip_limit})"
            if total >= total_limit:
                return f"the broker has {total} connections (max.connections={total_limit})"
            _TOTAL.pack_into(self._map, 0, total + 1)
            if slot is not None:
                _SLOT.pack_into(self._map, _TOTAL.size + slot * _SLOT.size, key, count + 1)
            return None

    def close(self, host: str) -> None:
        key = self._key(host)
        with self._lock:
            (total,) = _TOTAL.unpack_from(self._map, 0)
            _TOTAL.pack_into(self._map, 0, max(0, total - 1))
            slot = self._find(key, create=False)
            if slot is not None:
                count = _SLOT.unpack_from(self._map, _TOTAL.size + slot * _SLOT.size)[1]
                _SLOT.pack_into(self._map, _TOTAL.size + slot * _SLOT.size, key, max(0, count - 1))

    def reset(self) -> None:
        """All workers stopped (before they start again): nothing is connected."""
        with self._lock:
            self._map[:] = bytes(len(self._map))


class SharedCounters:
    """A few counters in memory the workers share, changed under a lock: the partitions of the
    whole broker per log dir (log/log_manager.py places a new partition in the dir with fewest)."""

    _COUNT = struct.Struct("=q")

    def __init__(self, size: int) -> None:
        self._map = mmap.mmap(-1, max(1, size) * self._COUNT.size)
        self._lock = multiprocessing.get_context("fork").Lock()

    def get(self, index: int) -> int:
        return self._COUNT.unpack_from(self._map, index * self._COUNT.size)[0]

    def add(self, index: int, delta: int) -> None:
        with self._lock:
            self._COUNT.pack_into(self._map, index * self._COUNT.size, self.get(index) + delta)

    def reset(self) -> None:
        with self._lock:
            self._map[:] = bytes(len(self._map))
