"""`kill -USR1 <broker pid>` logs every asyncio task's stack (broker/task_dump.py), from one process
and from each worker of a broker with several (the supervisor passes the signal on), and the broker
goes on serving."""

from __future__ import annotations

import os
import re
import signal
import time

import pytest

from client import WireClient
from testing.broker_process import running_broker
from test_workers import _children


@pytest.mark.parametrize("workers", [1, 2])
def test_sigusr1_logs_every_task_and_serving_goes_on(tmp_path, workers):
    with running_broker(tmp_path, config={"num.worker.processes": workers}) as broker:
        with WireClient(broker.bootstrap, timeout=5) as client:
            assert client.call("Metadata", 12, {"topics": None, "allow_auto_topic_creation": False,
                                                "include_topic_authorized_operations": False}).brokers
        dump = broker.task_dump()
        headers = re.findall(r"SIGUSR1: (\d+) asyncio tasks", dump)
        assert len(headers) == workers, dump
        assert all(int(count) > 0 for count in headers)
        assert "Stack for <Task" in dump
        if workers > 1:  # each worker's own tasks, and every worker still running
            assert len(_children(broker.process.pid)) == workers
            assert "kafka_wire.tasks" in broker.log_path.read_text()
        # A second dump, then requests as before: nothing stopped.
        os.kill(broker.process.pid, signal.SIGUSR1)
        time.sleep(0.5)
        with WireClient(broker.bootstrap, timeout=5) as client:
            assert client.call("ApiVersions", 3, {"client_software_name": "t",
                                                  "client_software_version": "1"}).error_code == 0
        assert broker.is_running()
