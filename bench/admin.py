"""What every scenario does to a broker before and after measuring it: the settings kafka-wire runs
with, and topics created and deleted through the admin client (any broker alike)."""

from __future__ import annotations

import sys
import time

from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

# Kafka's defaults, except the socket buffers: -1 leaves them to the OS (autotuning up to
# net.ipv4.tcp_wmem/rmem), which is what tansu gets; Kafka's default 102400 costs ~15% more broker
# CPU per fetched GB here (bench/PROFILE.md). And the quickstart server.properties' 0 ms initial
# rebalance delay, which the reference Kafka runs with (compat/reference_kafka.py): with Kafka's
# default 3 s here and 0 there, the groups rows measured the setting, not the brokers.
OUR_SETTINGS = {"socket.send.buffer.bytes": "-1", "socket.receive.buffer.bytes": "-1",
                "group.initial.rebalance.delay.ms": "0"}

# Kafka's controller takes at most 10,000 records per operation (one per partition): larger topics
# are created with this many partitions, then grown with CreatePartitions.
MAX_PARTITIONS_PER_CREATE = 5000


def create_topic(bootstrap: str, name: str, partitions: int, configs: dict[str, str] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    first = min(partitions, MAX_PARTITIONS_PER_CREATE)
    futures = admin.create_topics([NewTopic(name, first, 1, config=configs or {})], operation_timeout=60)
    futures[name].result(300)
    while first < partitions:
        first = min(partitions, first + MAX_PARTITIONS_PER_CREATE)
        admin.create_partitions([NewPartitions(name, first)], operation_timeout=60)[name].result(300)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        topic = admin.list_topics(name, timeout=10).topics.get(name)
        if topic is not None and topic.error is None and len(topic.partitions) == partitions \
                and all(p.leader >= 0 for p in topic.partitions.values()):
            return
        time.sleep(0.05)
    raise RuntimeError(f"topic {name} did not get {partitions} partitions with leaders")


def delete_topic(bootstrap: str, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        admin.delete_topics([name], operation_timeout=60)[name].result(120)
    except Exception as exc:  # a failed cleanup should not void the measurements
        print(f"  (could not delete {name}: {exc})", file=sys.stderr)
