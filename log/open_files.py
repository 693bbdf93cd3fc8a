"""A bounded cache of the log's open file descriptors: idle files are closed and reopened on demand.

A broker with many partitions would otherwise hold a descriptor for every segment file and for
the active segment's two index files, three per partition at least: 10,000 partitions need more
than a default RLIMIT_NOFILE allows. Kafka holds one per segment (its indexes stay memory-mapped
once closed) and asks users to raise the limit; here every segment file and index file being
written is a `CachedFile` whose descriptor lives in one `OpenFiles` cache of at most `limit`
descriptors, the least recently used closed first. A file is reopened by path the next time it
is used, so nothing changes for its users but the cost of an open(2) after a long idle spell.

A file that must keep its descriptor (a FileSlice handed to sendfile, the log cleaner's view of
a segment: the file may be renamed or unlinked meanwhile, and the data must stay readable) is
pinned; pinned files are never closed by the cache, so with more pinned files than the limit the
cache holds more than its limit until they are unpinned. Writes never depend on a descriptor
staying open: on Linux an fsync through a descriptor opened later writes back the pages written
through a closed one (the page cache belongs to the file), so `dirty` files are fsynced by
reopening them.

Used from the event loop and from the log cleaner's and flusher's threads: one lock guards it.
"""

from __future__ import annotations

import os
import resource
import threading
from collections import OrderedDict

# What the cache may hold when no limit is configured: half the process's RLIMIT_NOFILE (the rest
# is for sockets, checkpoints and the interpreter), at least MIN_LIMIT.
MIN_LIMIT = 16


def default_limit() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = 1 << 20
    return max(MIN_LIMIT, soft // 2)


class CachedFile:
    """A file opened on demand through an OpenFiles cache. `fd` opens it when closed; `pin()` keeps
    the descriptor open until the matching `unpin()`; `close()` closes it for good."""

    __slots__ = ("path", "flags", "_cache", "_fd", "_pins", "_closed")

    def __init__(self, cache: "OpenFiles", path: str, flags: int, fd: int = -1):
        self.path = path
        # Flags to reopen with (never O_CREAT/O_EXCL/O_TRUNC: the file exists by then).
        self.flags = flags & ~(os.O_CREAT | os.O_EXCL | os.O_TRUNC)
        self._cache = cache
        self._fd = -1
        self._pins = 0
        self._closed = False
        if fd >= 0:
            self._fd = fd
            cache._opened(self)

    @property
    def is_open(self) -> bool:
        return self._fd >= 0

    @property
    def fd(self) -> int:
        """The descriptor, opened now if the cache had closed it."""
        return self._cache._use(self)

    def pin(self) -> int:
        """Open (if needed) and keep open until `unpin`; returns the descriptor."""
        return self._cache._pin(self)

    def unpin(self) -> None:
        self._cache._unpin(self)

    def detach(self) -> int:
        """Hand the open descriptor (-1 when none) to the caller, who closes it; the cache forgets it."""
        return self._cache._detach(self)

    def close(self) -> None:
        """Close for good (a pinned descriptor stays open until its last unpin)."""
        self._cache._close(self)

    def __repr__(self) -> str:
        return f"CachedFile({self.path!r}, fd={self._fd}, pins={self._pins})"


class OpenFiles:
    """At most `limit` open descriptors of CachedFiles (pinned ones excepted), closed LRU first."""

    def __init__(self, limit: int | None = None):
        self.limit = default_limit() if limit is None else max(1, int(limit))
        self._lock = threading.Lock()
        # Open, unpinned files, least recently used first.
        self._idle: OrderedDict[CachedFile, None] = OrderedDict()
        self._pinned_open = 0
        # Counters for metrics and tests: opens after an eviction, and evictions.
        self.reopens = 0
        self.evictions = 0

    def __len__(self) -> int:
        """Descriptors held now."""
        with self._lock:
            return len(self._idle) + self._pinned_open

    def open(self, path: str, flags: int, mode: int = 0o644) -> CachedFile:
        """Open `path` now (creating it as `flags` say) and return it as a cached file."""
        with self._lock:
            self._make_room(1)
        fd = os.open(path, flags, mode)
        return CachedFile(self, path, flags, fd)

    def lazy(self, path: str, flags: int) -> CachedFile:
        """A cached file for an existing `path`, opened on first use."""
        return CachedFile(self, path, flags)

    def set_limit(self, limit: int) -> None:
        with self._lock:
            self.limit = max(1, int(limit))
            self._make_room(0)

    # -- internals (called by CachedFile) --------------------------------------------------------

    def _make_room(self, wanted: int) -> None:
        while self._idle and len(self._idle) + self._pinned_open + wanted > self.limit:
            victim, _ = self._idle.popitem(last=False)
            fd, victim._fd = victim._fd, -1
            self.evictions += 1
            os.close(fd)

    def _opened(self, file: CachedFile) -> None:
        with self._lock:
            self._make_room(1)
            self._idle[file] = None

    def _reopen(self, file: CachedFile) -> None:
        if file._closed:
            raise ValueError(f"{file.path} is closed")
        self._make_room(1)
        file._fd = os.open(file.path, file.flags)
        self.reopens += 1

    def _use(self, file: CachedFile) -> int:
        with self._lock:
            if file._fd < 0:
                self._reopen(file)
                if file._pins:
                    self._pinned_open += 1
                else:
                    self._idle[file] = None
            elif not file._pins:
                self._idle.move_to_end(file)
            return file._fd

    def _pin(self, file: CachedFile) -> int:
        with self._lock:
            if file._fd < 0:
                self._reopen(file)
            elif not file._pins:
                del self._idle[file]
            if not file._pins:
                self._pinned_open += 1
            file._pins += 1
            return file._fd

    def _unpin(self, file: CachedFile) -> None:
        with self._lock:
            file._pins -= 1
            if file._pins:
                return
            self._pinned_open -= 1
            if file._closed:
                fd, file._fd = file._fd, -1
                os.close(fd)
            else:
                self._idle[file] = None
                self._make_room(0)

    def _detach(self, file: CachedFile) -> int:
        with self._lock:
            fd = file._fd
            if fd < 0 or file._pins:
                return os.dup(fd) if fd >= 0 else -1
            del self._idle[file]
            file._fd = -1
            return fd

    def _close(self, file: CachedFile) -> None:
        with self._lock:
            if file._closed:
                return
            file._closed = True
            if file._pins or file._fd < 0:
                return
            del self._idle[file]
            fd, file._fd = file._fd, -1
            os.close(fd)


# The cache every log segment of this process uses (the broker sets its limit from its config).
OPEN_FILES = OpenFiles()
