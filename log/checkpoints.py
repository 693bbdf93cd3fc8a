"""Kafka's text checkpoint files, written atomically (tmp file, fsync, rename, fsync of the directory).

Format (Kafka's CheckpointFile): a version line (`0`), a count line, then one entry per line
with space-separated fields. Offset checkpoints at the log-dir level hold `topic partition offset`
(recovery-point-offset-checkpoint, log-start-offset-checkpoint, replication-offset-checkpoint);
the per-partition leader-epoch-checkpoint holds `epoch startOffset`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

CHECKPOINT_VERSION = 0

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
CLEAN_SHUTDOWN_MARKER = ".kafka_cleanshutdown"


class CorruptCheckpoint(ValueError):
    """A checkpoint file that does not parse."""


def fsync_directory(path: str) -> None:
    """Make a create, rename or unlink inside `path` durable."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_directory_if_exists(path: str) -> None:
    """fsync_directory for work done later, off the event loop: the directory may be gone by then
    (a deleted partition), which is not an error (Kafka's Utils.flushDirIfExists)."""
    try:
        fsync_directory(path)
    except FileNotFoundError:
        pass


def fsync_file_if_exists(path: str) -> None:
    """fsync a file written earlier without it (a producer snapshot taken on a roll)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file_atomically(path: str, data: bytes, sync: bool = True) -> None:
    """Replace `path` with `data` so a crash leaves either the old or the new content.

    sync=False skips the fsyncs (of the file and of its directory): the caller fsyncs them later,
    off the event loop, and copes with a file a crash left empty or torn (Kafka's producer
    snapshots taken on a roll are written so, and flushed by the roll's background flush).
    """
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if sync:
        fsync_directory(os.path.dirname(os.path.abspath(path)))


def _read_entries(path: str, fields: int) -> list[list[str]]:
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    except UnicodeDecodeError:
        raise CorruptCheckpoint(f"{path}: not a text file") from None
    if not lines:
        raise CorruptCheckpoint(f"{path}: empty checkpoint file")
    try:
        version = int(lines[0])
        count = int(lines[1])
    except (IndexError, ValueError):
        raise CorruptCheckpoint(f"{path}: malformed header") from None
    if version != CHECKPOINT_VERSION:
        raise CorruptCheckpoint(f"{path}: unrecognised version {version}")
    body = lines[2:]
    if len(body) != count:
        raise CorruptCheckpoint(f"{path}: expected {count} entries, found {len(body)}")
    entries = []
    for line in body:
        parts = line.split(" ")
        if len(parts) != fields:
            raise CorruptCheckpoint(f"{path}: malformed line {line!r}")
        entries.append(parts)
    return entries


def _write_entries(path: str, entries: list[str], sync: bool = True) -> None:
    text = f"{CHECKPOINT_VERSION}\n{len(entries)}\n" + "".join(line + "\n" for line in entries)
    write_file_atomically(path, text.encode("utf-8"), sync=sync)


def read_offset_checkpoint(path: str) -> dict[tuple[str, int], int]:
    """`topic partition offset` lines as {(topic, partition): offset}; {} when the file is missing."""
    result = {}
    for topic, partition, offset in _read_entries(path, 3):
        try:
            result[(topic, int(partition))] = int(offset)
        except ValueError:
            raise CorruptCheckpoint(f"{path}: malformed line {topic} {partition} {offset}") from None
    return result


def write_offset_checkpoint(path: str, offsets: Mapping[tuple[str, int], int]) -> None:
    lines = [f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(offsets.items())]
    _write_entries(path, lines)


def read_leader_epoch_checkpoint(path: str) -> list[tuple[int, int]]:
    """`epoch startOffset` lines as [(epoch, start_offset)]; [] when the file is missing."""
    try:
        return [(int(epoch), int(start)) for epoch, start in _read_entries(path, 2)]
    except ValueError:
        raise CorruptCheckpoint(f"{path}: malformed entry") from None


def write_leader_epoch_checkpoint(path: str, entries: Iterable[tuple[int, int]], sync: bool = True) -> None:
    _write_entries(path, [f"{epoch} {start}" for epoch, start in entries], sync=sync)
