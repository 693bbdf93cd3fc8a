"""Counts the workers of one broker share (memory made by the supervisor before forking).

Kafka's connection quotas (max.connections, max.connections.per.ip[.overrides]) for the whole
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


class SharedRateWindows:
    """Client byte-rate quotas (broker/client_quotas.py) for the whole broker when its clients'
    requests are served by several workers: each quota sensor's sampled windows live in memory the
    workers share (made before the fork), read and changed under one lock, so a client that sends
    through two workers is measured against its quota once, not once per worker.

    A sensor is a slot found from a hash of its name (then the next slots); a slot whose windows
    have all expired is taken by the next new sensor. With every slot in use a new sensor stays
    local to its worker (counted per worker, as before this table)."""

    SLOTS = 4096
    WINDOWS = 11  # quota.window.num
    _HEAD = struct.Struct("=Qq")  # sensor hash (0: free), windows in use
    _WINDOW = struct.Struct("=dd")  # window start (ms, CLOCK_MONOTONIC: the same clock in every worker), total

    def __init__(self) -> None:
        self._slot_size = self._HEAD.size + self.WINDOWS * self._WINDOW.size
        self._map = mmap.mmap(-1, self.SLOTS * self._slot_size)
        self._lock = multiprocessing.get_context("fork").Lock()

    @staticmethod
    def key(name: str) -> int:
        return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little") or 1

    def slot(self, key: int, expired_before: float) -> int | None:
        """The slot of sensor `key`, claimed if it has none (None: every slot in use)."""
        with self._lock:
            free = None
            start = key % self.SLOTS
            for i in range(self.SLOTS):
                slot = (start + i) % self.SLOTS
                held, used = self._HEAD.unpack_from(self._map, slot * self._slot_size)
                if held == key:
                    return slot
                if held == 0 or not any(begin > expired_before for begin, _ in self._load(slot, used)):
                    if free is None:
                        free = slot
                    if held == 0:
                        break
            if free is not None:
                self._HEAD.pack_into(self._map, free * self._slot_size, key, 0)
            return free

    def _load(self, slot: int, used: int) -> list[list]:
        base = slot * self._slot_size + self._HEAD.size
        return [list(self._WINDOW.unpack_from(self._map, base + i * self._WINDOW.size)) for i in range(used)]

    def update(self, slot: int, key: int, change):
        """`change(windows)` on the slot's windows ([start ms, total], oldest first) under the lock,
        stored back: (True, its result), or (False, None) when another sensor took the slot over."""
        with self._lock:
            held, used = self._HEAD.unpack_from(self._map, slot * self._slot_size)
            if held != key:
                return False, None
            windows = self._load(slot, used)
            result = change(windows)
            windows = windows[-self.WINDOWS:]
            self._HEAD.pack_into(self._map, slot * self._slot_size, key, len(windows))
            base = slot * self._slot_size + self._HEAD.size
            for i, (begin, total) in enumerate(windows):
                self._WINDOW.pack_into(self._map, base + i * self._WINDOW.size, begin, total)
            return True, result

    def reset(self) -> None:
        with self._lock:
            self._map[:] = bytes(len(self._map))
