"""A FUSE filesystem that loses what was not fsynced, as Jepsen's LazyFS does: power loss for one broker.

    python -m compat.faults.lazyfs <backing dir> <mount point>     # foreground, until unmounted
    os.mkdir(f"{mount point}{CONTROL_PATH}")                        # power loss

Every file operation passes through to the backing directory, except file data: a write is kept
in this process's memory (the "page cache") until the file is fsynced; reads see it. A power loss
drops every unsynced write, as a power cut would: what the broker wrote but did not fsync is
gone, and its files are as the disk last had them. The trigger is a mkdir of CONTROL_PATH in the
mount (a signal would wait for libfuse's loop to return to Python, which it does not while idle).
Metadata (create, rename, unlink, truncate, mkdir) goes to the disk at once, a simplification
LazyFS makes optional.

Mounted with direct_io and no attribute caching, so the kernel caches nothing of a file's data or
size: after a drop, the next open and read see the disk. fusepy (PyPI) over libfuse2 (Debian's
libfuse2); compat/setup-faults.sh installs both.
"""

from __future__ import annotations

import errno
import os
import sys
import threading

try:
    from fuse import FUSE, FuseOSError, Operations  # fusepy; raises OSError when libfuse2 is missing
except (ImportError, OSError) as missing:
    FUSE, FuseOSError, Operations = None, OSError, object
    WHY_UNAVAILABLE = f"fusepy over libfuse2 is not usable here ({missing}); compat/setup-faults.sh installs it"
else:
    WHY_UNAVAILABLE = None if os.path.exists("/dev/fuse") else "/dev/fuse does not exist"


CONTROL_PATH = "/.lazyfs-power-loss"


class PendingWrites:
    """The unsynced writes of one file, in order; adjacent appends are merged."""

    def __init__(self, disk_size: int) -> None:
        self.writes: list[list] = []   # [offset, bytearray]
        self.size = disk_size          # the size the process sees

    def write(self, offset: int, data: bytes) -> None:
        if self.writes and self.writes[-1][0] + len(self.writes[-1][1]) == offset:
            self.writes[-1][1] += data
        else:
            self.writes.append([offset, bytearray(data)])
        self.size = max(self.size, offset + len(data))

    def overlay(self, offset: int, disk_data: bytes, length: int) -> bytes:
        end = min(offset + length, self.size)
        if end <= offset:
            return b""
        view = bytearray(disk_data[:end - offset].ljust(end - offset, b"\0"))
        for start, data in self.writes:
            lo, hi = max(start, offset), min(start + len(data), end)
            if lo < hi:
                view[lo - offset:hi - offset] = data[lo - start:hi - start]
        return bytes(view)

    def truncate(self, length: int) -> None:
        kept = []
        for start, data in self.writes:
            if start < length:
                kept.append([start, data[:length - start]])
        self.writes = kept
        self.size = length


class LazyFS(Operations):
    def __init__(self, root: str) -> None:
        self.root = os.path.realpath(root)
        self._guard = threading.RLock()
        self.pending: dict[str, PendingWrites] = {}
        self.dropped_bytes = 0

    def _full(self, path: str) -> str:
        return os.path.join(self.root, path.lstrip("/"))

    # -- power loss ------------------------------------------------------------------------------------
    def drop_unsynced(self) -> int:
        with self._guard:
            lost = sum(len(d) for p in self.pending.values() for _, d in p.writes)
            for path, pending in sorted(self.pending.items()):
                # Which files lost what: the evidence a durability anomaly is diagnosed from.
                try:
                    on_disk = os.path.getsize(self._full(path))
                except OSError:
                    on_disk = "?"
                print(f"lazyfs: power loss: {path}: {sum(len(d) for _, d in pending.writes)} unsynced bytes "
                      f"dropped (size {pending.size} -> {on_disk} on disk)", file=sys.stderr, flush=True)
            self.pending.clear()
            self.dropped_bytes += lost
            return lost

    # -- metadata: straight to the disk ----------------------------------------------------------------
    def getattr(self, path, fh=None):
        try:
            st = os.lstat(self._full(path))
        except OSError as error:
            raise FuseOSError(error.errno) from None
        attrs = {key: getattr(st, key) for key in ("st_atime", "st_ctime", "st_gid", "st_mode", "st_mtime",
                                                   "st_nlink", "st_size", "st_uid")}
        with self._guard:
            pending = self.pending.get(path)
            if pending is not None:
                attrs["st_size"] = pending.size
        return attrs

    def readdir(self, path, fh):
        return [".", "..", *os.listdir(self._full(path))]

    def mkdir(self, path, mode):
        if path == CONTROL_PATH:
            lost = self.drop_unsynced()
            print(f"lazyfs: power loss: {lost} unsynced bytes dropped", file=sys.stderr, flush=True)
            return 0
        return os.mkdir(self._full(path), mode)

    def rmdir(self, path):
        return os.rmdir(self._full(path))

    def chmod(self, path, mode):
        return os.chmod(self._full(path), mode)

    def chown(self, path, uid, gid):
        return os.chown(self._full(path), uid, gid)

    def utimens(self, path, times=None):
        return os.utime(self._full(path), times)

    def statfs(self, path):
        st = os.statvfs(self._full(path))
        return {key: getattr(st, key) for key in ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail",
                                                  "f_ffree", "f_files", "f_flag", "f_frsize", "f_namemax")}

    def unlink(self, path):
        with self._guard:
            self.pending.pop(path, None)
            return os.unlink(self._full(path))

    def rename(self, old, new):
        with self._guard:
            os.rename(self._full(old), self._full(new))
            pending = self.pending.pop(old, None)
            self.pending.pop(new, None)
            if pending is not None:
                self.pending[new] = pending
            prefix = old.rstrip("/") + "/"
            for path in [p for p in self.pending if p.startswith(prefix)]:
                self.pending[new.rstrip("/") + "/" + path[len(prefix):]] = self.pending.pop(path)

    def truncate(self, path, length, fh=None):
        with self._guard:
            pending = self.pending.get(path)
            if pending is not None:
                pending.truncate(length)
            disk_size = os.path.getsize(self._full(path))
            if length < disk_size:
                os.truncate(self._full(path), length)
            elif pending is None and length > disk_size:
                self._pending(path).truncate(length)  # growth is data: zeros, unsynced

    # -- files -------------------------------------------------------------------------------------------
    def open(self, path, flags):
        # Read-write underneath whatever the caller asked: fsync writes the pending data through it.
        fd = os.open(self._full(path), os.O_RDWR)
        if flags & os.O_TRUNC:
            self.truncate(path, 0)
        return fd

    def create(self, path, mode, fi=None):
        return os.open(self._full(path), os.O_RDWR | os.O_CREAT | os.O_TRUNC, mode)

    def _pending(self, path: str) -> PendingWrites:
        pending = self.pending.get(path)
        if pending is None:
            pending = self.pending[path] = PendingWrites(os.path.getsize(self._full(path)))
        return pending

    def read(self, path, size, offset, fh):
        with self._guard:
            disk = os.pread(fh, size, offset)
            pending = self.pending.get(path)
            return disk if pending is None else pending.overlay(offset, disk, size)

    def write(self, path, data, offset, fh):
        with self._guard:
            self._pending(path).write(offset, data)
            return len(data)

    def fsync(self, path, datasync, fh):
        with self._guard:
            pending = self.pending.pop(path, None)
            if pending is not None:
                if os.fstat(fh).st_size > pending.size:
                    os.ftruncate(fh, pending.size)
                for start, data in pending.writes:
                    os.pwrite(fh, bytes(data), start)
                if os.fstat(fh).st_size < pending.size:
                    os.ftruncate(fh, pending.size)
            os.fsync(fh)
            return 0

    def fsyncdir(self, path, datasync, fh):
        return 0

    def flush(self, path, fh):
        return 0

    def release(self, path, fh):
        return os.close(fh)

    def opendir(self, path):
        if not os.path.isdir(self._full(path)):
            raise FuseOSError(errno.ENOTDIR)
        return 0


def main(argv: list[str]) -> int:
    backing, mount_point = argv[1], argv[2]
    filesystem = LazyFS(backing)
    FUSE(filesystem, mount_point, foreground=True, nothreads=False, direct_io=True, attr_timeout=0,
         entry_timeout=0, negative_timeout=0, default_permissions=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
