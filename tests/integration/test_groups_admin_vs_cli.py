"""Java AdminClient (listConsumerGroups, describeConsumerGroups, listConsumerGroupOffsets,
deleteConsumerGroups) and `kafka-wire groups` give the same answers about the same groups.
Each look is a process (a JVM, or the CLI's Python): the looks at an unchanging group run at the same time."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from testing.broker_process import running_broker

CLIENTS = __import__("pathlib").Path(__file__).resolve().parents[1] / "clients" / "java"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with running_broker(tmp_path_factory.mktemp("groups-admin"),
                        config={"group.initial.rebalance.delay.ms": 0}) as started:
        yield started


@pytest.fixture(scope="module")
def admin_dump(java_kafka_clients):
    command = java_kafka_clients("3.9.0").program(CLIENTS / "GroupAdminDump.java")

    def run(bootstrap: str, *args: str) -> list[list[str]]:
        result = subprocess.run([*command, bootstrap, *args],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stdout + result.stderr
        return [line.split() for line in result.stdout.splitlines() if line.strip()]

    return run


def cli(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "cli", *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def at_once(*looks):
    """Calls each of `looks` (no arguments) in a thread of its own; their results, in order."""
    with ThreadPoolExecutor(len(looks)) as pool:
        return [future.result() for future in [pool.submit(look) for look in looks]]


def rows(output: str) -> list[list[str]]:
    lines = [line for line in output.splitlines() if line.strip()]
    header = next(i for i, line in enumerate(lines) if line.startswith("GROUP "))
    return [line.split() for line in lines[header + 1:]]


def test_java_admin_and_cli_agree(broker, admin_dump):
    b = ["--bootstrap-server", broker.bootstrap]
    topic, group = f"agree-{uuid.uuid4().hex[:8]}", f"agree-group-{uuid.uuid4().hex[:8]}"
    cli("topics", "create", *b, "--topic", topic, "--partitions", "3")
    subprocess.run([sys.executable, "-m", "cli", "produce", *b, "--topic", topic, "--key-separator", "="],
                   input="".join(f"k{i}=v{i}\n" for i in range(30)), text=True, check=True, timeout=60)
    # Commit 12 records' worth of offsets, then keep one live member in the group.
    cli("consume", *b, "--topic", topic, "--group", group, "--from-beginning", "--max-messages", "12",
        "--timeout-ms", "15000")
    member = subprocess.Popen([sys.executable, "-m", "cli", "consume", *b, "--topic", topic, "--group", group,
                               "--client-id", "agree-client", "--timeout-ms", "60000"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            java = admin_dump(broker.bootstrap, "describe", group)
            if java[0][2] == "Stable" and any(line[0] == "MEMBER" for line in java):
                break
            assert time.monotonic() < deadline, java
            time.sleep(0.3)
        [java_group] = [line for line in java if line[0] == "GROUP"]  # GROUP id state assignor members coordinator
        java_members = [line[1:] for line in java if line[0] == "MEMBER"]
        state, members, java_list, cli_list = at_once(
            lambda: rows(cli("groups", "describe", group, *b, "--state")),
            lambda: rows(cli("groups", "describe", group, *b, "--members")),
            lambda: admin_dump(broker.bootstrap, "list"),
            lambda: cli("groups", "list", *b))
        assert [[s[0], s[3], s[4], s[5]] for s in state] == [[group, java_group[3], "Stable", java_group[4]]]
        # CLI: GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS; Java: consumerId host clientId #partitions
        assert sorted(m[1:] for m in members) == sorted(java_members)
        listed = {line[1] for line in java_list}
        assert group in listed and set(cli_list.split()) == listed
    finally:
        member.send_signal(signal.SIGINT)  # commits, leaves the group
        # 90 s: in the fresh-clone CI run of 2026-11-25 05:38 the member was still running 30 s after
        # SIGINT (not diagnosed: the interrupt may land inside a request on the coordinator connection)
        member.communicate(timeout=90)
    java, described = at_once(lambda: admin_dump(broker.bootstrap, "describe", group),
                              lambda: cli("groups", "describe", group, *b))
    java_offsets = sorted((line[1], int(line[2]), int(line[3])) for line in java if line[0] == "OFFSET")
    cli_offsets = sorted((r[1], int(r[2]), int(r[3])) for r in rows(described) if r[3] != "-")
    assert java_offsets == cli_offsets and sum(o for _, _, o in java_offsets) == 30
    assert admin_dump(broker.bootstrap, "delete", group) == [["DELETED", group]]
    cli_list, java_list = at_once(lambda: cli("groups", "list", *b), lambda: admin_dump(broker.bootstrap, "list"))
    assert group not in cli_list.split()
    assert group not in {line[1] for line in java_list}
