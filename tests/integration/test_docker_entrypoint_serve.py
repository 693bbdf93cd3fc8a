"""docker/entrypoint.py for real, without Docker: KAFKA_* variables in, a running broker out, on
two listeners with their advertised addresses, stopped cleanly by SIGTERM (what `docker stop`
sends; the entrypoint execs the broker, so the signal reaches it)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testing.broker_process import free_port
from client import WireClient

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(60)


def _wait_for(port: int, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the broker did not start:\n{process.communicate()[1]}") from None
            time.sleep(0.05)


def test_entrypoint_runs_a_broker_configured_by_the_environment(tmp_path):
    internal, external = free_port(), free_port()
    env = dict(os.environ,
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               KAFKA_WIRE_PROPERTIES=str(tmp_path / "etc" / "server.properties"),
               KAFKA_LOG_DIRS=str(tmp_path / "data"),
               KAFKA_BROKER_ID="3",
               KAFKA_LOG_RETENTION_HOURS="24",
               KAFKA_LISTENERS=f"PLAINTEXT://127.0.0.1:{internal},EXTERNAL://127.0.0.1:{external}",
               KAFKA_ADVERTISED_LISTENERS=f"PLAINTEXT://127.0.0.1:{internal},EXTERNAL://localhost:{external}",
               KAFKA_LISTENER_SECURITY_PROTOCOL_MAP="PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT",
               KAFKA_CFG_NUM_PARTITIONS="4",
               KAFKA_HEAP_OPTS="-Xmx1G",
               KAFKA_WIRE_LOG_FORMAT="json")
    process = subprocess.Popen([sys.executable, str(REPO / "docker" / "entrypoint.py")], env=env, cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(external, process)
        with WireClient(f"127.0.0.1:{external}") as client:
            request = {"topics": [{"name": "auto"}], "allow_auto_topic_creation": True}
            client.call("Metadata", 12, request)  # creates the topic (Kafka answers its error first)
            metadata = client.call("Metadata", 12, request)
        # Each listener advertises its own address; KAFKA_CFG_NUM_PARTITIONS became num.partitions.
        assert [(b.node_id, b.host, b.port) for b in metadata.brokers] == [(3, "localhost", external)]
        assert len(metadata.topics[0].partitions) == 4
        with WireClient(f"127.0.0.1:{internal}") as client:
            brokers = client.call("Metadata", 12, {"topics": []}).brokers
        assert [(b.host, b.port) for b in brokers] == [("127.0.0.1", internal)]
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    properties = (tmp_path / "etc" / "server.properties").read_text()
    assert "log.retention.hours=24" in properties and "heap" not in properties.lower()
    assert (tmp_path / "data" / "meta.properties").exists()
    assert '"message": "shut down cleanly"' in stderr
