"""Facts about the machine a benchmark ran on, measured by the same command: cores, memory,
TCP loopback bandwidth and disk write bandwidth with fdatasync after every block."""

from __future__ import annotations

import os
import platform
import socket
import time
from pathlib import Path

BLOCK = 1 << 20


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def memory_bytes(field: str = "MemTotal") -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def loopback_bandwidth(total_bytes: int) -> float:
    """Bytes/s pushed through one TCP loopback connection between two processes (1 MiB sends)."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    pid = os.fork()
    if pid == 0:  # the receiver
        try:
            conn, _ = listener.accept()
            buf = bytearray(BLOCK)
            got = 0
            while got < total_bytes:
                n = conn.recv_into(buf)
                if not n:
                    break
                got += n
            conn.sendall(b"k")
            conn.close()
        finally:
            os._exit(0)
    listener.close()
    try:
        sock = socket.create_connection(("127.0.0.1", port))
        block = memoryview(os.urandom(BLOCK))
        start = time.perf_counter()
        sent = 0
        while sent < total_bytes:
            sock.sendall(block)
            sent += BLOCK
        sock.recv(1)
        elapsed = time.perf_counter() - start
        sock.close()
    finally:
        os.waitpid(pid, 0)
    return sent / elapsed


def fdatasync_bandwidth(directory: Path, total_bytes: int) -> float:
    """Bytes/s writing 1 MiB blocks to a new file in `directory`, fdatasync after each block."""
    path = Path(directory) / "fdatasync-probe"
    block = os.urandom(BLOCK)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        start = time.perf_counter()
        written = 0
        while written < total_bytes:
            written += os.write(fd, block)
            os.fdatasync(fd)
        elapsed = time.perf_counter() - start
    finally:
        os.close(fd)
        path.unlink()
    return written / elapsed


def measure(scratch: Path, quick: bool) -> dict:
    loopback_bytes = (256 if quick else 2048) * BLOCK
    disk_bytes = (64 if quick else 512) * BLOCK
    return {
        "cores": os.cpu_count(),
        "cpu": cpu_model(),
        "memory_gib": memory_bytes() / 2**30,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "loopback_bytes_per_s": loopback_bandwidth(loopback_bytes),
        "fdatasync_bytes_per_s": fdatasync_bandwidth(scratch, disk_bytes),
        "load_average": os.getloadavg(),
    }
