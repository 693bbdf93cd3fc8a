"""Dynamic broker configs take effect on a running broker, changed by a real admin client
(confluent-kafka's incremental_alter_configs, librdkafka): message.max.bytes on broker 1 and as the
cluster default (a produce over the new limit answered MESSAGE_TOO_LARGE on every partition, so on
every worker that owns one), log.cleaner.backoff.ms (Sarama's case in issue 26, refused before as
"Cannot update these configs dynamically": now taken by the cleaner of every worker), both described
with their dynamic sources. Runs with the fixture's workers (KAFKA_WIRE_TEST_WORKERS) and with two.
"""

from __future__ import annotations

import re
import time

import pytest

from client import WireClient
from testing.broker_process import default_workers, running_broker

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import KafkaError, Producer  # noqa: E402
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,  # noqa: E402
                                   ConfigSource, NewTopic)

PARTITIONS = 4
BIG, SMALL = 5000, 1000


def alter(admin: AdminClient, name: str, **changes: str | None) -> None:
    entries = [ConfigEntry(key.replace("_", "."), value, incremental_operation=(
        AlterConfigOpType.DELETE if value is None else AlterConfigOpType.SET)) for key, value in changes.items()]
    for future in admin.incremental_alter_configs([ConfigResource("BROKER", name, incremental_configs=entries)]
                                                  ).values():
        future.result(timeout=30)


def alter_default(bootstrap: str, **changes: str | None) -> None:
    """The same on the default broker "", for which confluent-kafka has no ConfigResource: by WireClient."""
    with WireClient(bootstrap) as client:
        answer = client.call("IncrementalAlterConfigs", 1, {"resources": [{
            "resource_type": 4, "resource_name": "", "configs": [
                {"name": key.replace("_", "."), "config_operation": 1 if value is None else 0, "value": value}
                for key, value in changes.items()]}], "validate_only": False})
    assert answer.responses[0].error_code == 0, answer.responses[0].error_message


def describe(admin: AdminClient, kind: str, name: str) -> dict:
    (future,) = admin.describe_configs([ConfigResource(kind, name)]).values()
    return future.result(timeout=30)


def produce_everywhere(bootstrap: str, topic: str, size: int) -> set:
    """One record of `size` bytes to each partition; the errors the broker answered."""
    producer = Producer({"bootstrap.servers": bootstrap, "retries": 0, "linger.ms": 0})
    errors = []
    for partition in range(PARTITIONS):
        producer.produce(topic, b"v" * size, partition=partition,
                         on_delivery=lambda err, _msg: errors.append(err.code() if err else None))
    assert producer.flush(30) == 0
    return set(errors)


def cleaner_backoffs(log_path, backoff_ms: int) -> set[str]:
    """The processes whose cleaner said it took the backoff (dynamic_broker_config.apply_dynamic_broker_configs)."""
    text = log_path.read_text(errors="replace")
    return set(re.findall(rf"log cleaner backoff is now {backoff_ms} ms \(process (\d+)\)", text))


@pytest.mark.parametrize("workers", [None, 2], ids=["fixture-workers", "two-workers"])
def test_message_max_bytes_and_cleaner_backoff_change_live(tmp_path, workers):
    config = {} if workers is None else {"num.worker.processes": workers}
    with running_broker(tmp_path / "broker", config=config) as broker:
        settings = dict(item.split("=", 1) for item in broker.command if "=" in item and not item.startswith("-"))
        expected_workers = int(settings.get("num.worker.processes") or default_workers())
        assert expected_workers > 0
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        topic = "dynamic-limits"
        for future in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
            future.result(timeout=30)
        assert produce_everywhere(broker.bootstrap, topic, BIG) == {None}

        alter(admin, "1", message_max_bytes="2000", log_cleaner_backoff_ms="100")
        described = describe(admin, "BROKER", "1")
        for key, value in (("message.max.bytes", "2000"), ("log.cleaner.backoff.ms", "100")):
            assert (described[key].value, described[key].source, described[key].is_read_only) == (
                value, ConfigSource.DYNAMIC_BROKER_CONFIG.value, False)
        topic_limit = describe(admin, "TOPIC", topic)["max.message.bytes"]
        assert (topic_limit.value, topic_limit.source) == ("2000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
        # Every partition, whichever worker owns it, refuses a record over the new limit at once.
        assert produce_everywhere(broker.bootstrap, topic, BIG) == {KafkaError.MSG_SIZE_TOO_LARGE}
        assert produce_everywhere(broker.bootstrap, topic, SMALL) == {None}
        deadline = time.monotonic() + 10
        while len(cleaner_backoffs(broker.log_path, 100)) < expected_workers and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(cleaner_backoffs(broker.log_path, 100)) == expected_workers

        # The cluster default under the broker's own value; the broker's own deleted: the default rules.
        alter_default(broker.bootstrap, message_max_bytes="6000")
        alter(admin, "1", message_max_bytes=None)
        described = describe(admin, "BROKER", "1")["message.max.bytes"]
        assert (described.value, described.source) == ("6000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
        assert produce_everywhere(broker.bootstrap, topic, BIG) == {None}
        assert produce_everywhere(broker.bootstrap, topic, 7000) == {KafkaError.MSG_SIZE_TOO_LARGE}

        # Refused as Kafka 4.3 refuses them, nothing stored.
        with pytest.raises(confluent_kafka.KafkaException, match="Cannot update these configs dynamically"):
            alter(admin, "1", log_retention_check_interval_ms="1000")
        with pytest.raises(confluent_kafka.KafkaException, match="should not be greater than double the current "
                                                                 "value 8"):
            alter(admin, "1", num_io_threads="17")

        alter_default(broker.bootstrap, message_max_bytes=None)
        alter(admin, "1", log_cleaner_backoff_ms=None)
        described = describe(admin, "BROKER", "1")
        assert described["message.max.bytes"].source == ConfigSource.DEFAULT_CONFIG.value
        assert described["log.cleaner.backoff.ms"].value == "15000"
        assert produce_everywhere(broker.bootstrap, topic, 7000) == {None}
        deadline = time.monotonic() + 10
        while len(cleaner_backoffs(broker.log_path, 15000)) < expected_workers and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(cleaner_backoffs(broker.log_path, 15000)) == expected_workers


def test_cluster_mode_every_worker_of_every_broker_applies_the_default(zookeeper_installed, tmp_path):
    """ZooKeeper mode, two brokers of two workers each: the cluster default set through broker 2 reaches
    every worker of both (each follows /config/changes with its own ZooKeeper session)."""
    from testing.cluster import running_cluster

    config = {"num.worker.processes": 2, "default.replication.factor": 2, "offsets.topic.replication.factor": 2}
    with running_cluster(2, config=config, tmp_dir=tmp_path / "cluster") as cluster:
        topic = "dynamic-cluster-limits"
        cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=2)
        assert produce_everywhere(cluster.bootstrap, topic, BIG) == {None}
        alter_default(cluster.brokers[2].bootstrap, message_max_bytes="2000", log_cleaner_backoff_ms="100")
        for broker in cluster.brokers.values():
            cluster.wait_for(lambda broker=broker: len(cleaner_backoffs(broker.log_path, 100)) == 2, 15,
                             f"both workers of {broker.bootstrap} taking the new backoff")
        cluster.wait_for(lambda: produce_everywhere(cluster.bootstrap, topic, BIG) == {KafkaError.MSG_SIZE_TOO_LARGE},
                         15, "every partition's leader refusing records over the new limit")
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        for node_id in (1, 2):
            described = describe(admin, "BROKER", str(node_id))["message.max.bytes"]
            assert (described.value, described.source) == ("2000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
        alter_default(cluster.brokers[1].bootstrap, message_max_bytes=None, log_cleaner_backoff_ms=None)
        cluster.wait_for(lambda: produce_everywhere(cluster.bootstrap, topic, BIG) == {None}, 15,
                         "the static limit back on every partition")


def test_kafka_configs_prints_the_same_for_dynamic_broker_keys(reference_kafka, tmp_path):
    """Kafka's own kafka-configs (ConfigCommand, Kafka 4.3.0) against the reference Kafka and kafka-wire,
    outputs compared (compat/tool_compare.py): dynamic broker keys kafka-wire refused before set, described,
    refused as Kafka refuses them, deleted."""
    from compat.reference_kafka import KAFKA_4
    from compat.tool_compare import BOOTSTRAP, CONFIGS, ToolSession

    kafka = reference_kafka(KAFKA_4)
    differences = []
    with running_broker(tmp_path / "broker") as ours, ToolSession(KAFKA_4) as tools:
        c = (CONFIGS, "--bootstrap-server", BOOTSTRAP)
        # Kafka 4.3's storage format writes a cluster-level min.insync.replicas (KIP-966): the same here, so the
        # default broker's descriptions compare (as test_kafka_tools aligns them).
        done = tools.run(CONFIGS, "--bootstrap-server", ours.bootstrap, "--entity-type", "brokers",
                         "--entity-default", "--alter", "--add-config", "min.insync.replicas=1")
        assert done.exit == 0, done.stdout + done.stderr

        def run(*args: str, settle: bool = False) -> None:
            deadline = time.monotonic() + (5.0 if settle else 0.0)
            while not (pair := tools.compare(kafka.bootstrap, ours.bootstrap, *args)).same \
                    and time.monotonic() < deadline:
                time.sleep(0.5)  # Kafka applies dynamic configs from its metadata log a moment later
            if not pair.same:
                differences.append(pair.diff())

        broker_1 = ("--entity-type", "brokers", "--entity-name", "1")
        default = ("--entity-type", "brokers", "--entity-default")
        run(*c, *broker_1, "--alter", "--add-config", "log.cleaner.backoff.ms=100,num.io.threads=16")
        run(*c, *default, "--alter", "--add-config",
            "message.max.bytes=2000,listener.name.plaintext.max.connections=500")
        run(*c, *broker_1, "--describe", settle=True)
        run(*c, *default, "--describe", settle=True)
        run(*c, *broker_1, "--alter", "--add-config", "num.io.threads=40")
        run(*c, *broker_1, "--alter", "--add-config", "log.cleaner.threads=3")
        run(*c, *broker_1, "--alter", "--add-config", "log.retention.check.interval.ms=1000")
        run(*c, *default, "--alter", "--add-config", "ssl.cipher.suites=TLS_AES_128_GCM_SHA256")
        run(*c, *broker_1, "--alter", "--add-config", "ssl.keystore.location=/nonexistent.pem")
        run(*c, *broker_1, "--alter", "--delete-config", "log.cleaner.backoff.ms,num.io.threads")
        run(*c, *default, "--alter", "--delete-config", "message.max.bytes,listener.name.plaintext.max.connections")
        run(*c, *broker_1, "--describe", settle=True)
        run(*c, *default, "--describe", settle=True)
    assert not differences, f"{len(differences)} invocation(s) differ:\n\n" + "\n\n".join(differences)
