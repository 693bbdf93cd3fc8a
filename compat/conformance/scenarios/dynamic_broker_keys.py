"""Dynamic broker configs (KIP-226) key by key: IncrementalAlterConfigs (44) on the default broker ("")
and on broker 1 for every config Kafka 4.3 may change at run time, with Kafka's refusals (a read-only
key, a per-broker key at the cluster default, a keystore key without its listener prefix, a value of
the wrong type, a thread pool resized beyond half or double, a listener quota below 1, local retention
above retention, a changed listener), then changes that take effect at once: message.max.bytes (a
produce over the new limit answered MESSAGE_TOO_LARGE) and log.cleaner.backoff.ms, described with
their sources, synonyms and read-only flags, and a listener-prefixed key. Everything set is deleted
at the end, so later scenarios meet the static configuration.
"""

from __future__ import annotations

from broker.config import BROKER_KEYS, DYNAMIC_BROKER_KEYS
from broker.kafka_config_names import KAFKA_LISTENER_ONLY_SECURITY_CONFIG_NAMES, KAFKA_PER_BROKER_CONFIG_NAMES

from ..scenario import Session, scenario

BROKER = 4
SET, DELETE = 0, 1
# Keys not walked at their default: the listeners (each broker's own, walked by hand below) and broker 1's
# min.insync.replicas, which Kafka 4.3 refuses while eligible leader replicas (KIP-966) are on, a feature
# kafka-wire does not have (it answers as Kafka 3.9 and a 4.x cluster without ELR: accepted).
# The remote log manager's thread pools became dynamic in Kafka 4.0 (Kafka 3.9.1 refuses them, kafka-wire
# answers as 4.3: tests/unit/test_dynamic_broker_keys.py).
_OWN = {"listeners", "listener.security.protocol.map", "min.insync.replicas",
        "remote.log.manager.copier.thread.pool.size", "remote.log.manager.expiration.thread.pool.size",
        "remote.log.reader.threads"}
# Classes: a name Kafka's JVM loads.
_CLASSES = {"ssl.engine.factory.class": "org.apache.kafka.common.security.ssl.DefaultSslEngineFactory"}


def _value(name: str) -> str:
    """A value every broker accepts for a dynamic key: its default as Kafka prints it."""
    if name in _CLASSES:
        return _CLASSES[name]
    key = BROKER_KEYS[name]
    rendered = key.render(key.default)
    return "x" if rendered is None else rendered


def _alter(s: Session, v: int, resource: str, ops, label: str, validate_only: bool = True):
    return s.call("IncrementalAlterConfigs", v, {"resources": [{
        "resource_type": BROKER, "resource_name": resource,
        "configs": [{"name": name, "config_operation": op, "value": value} for name, op, value in ops]}],
        "validate_only": validate_only}, label=label)


def _describe(s: Session, resource: str, keys: list[str], label: str | None = None, record: bool = True):
    return s.call("DescribeConfigs", 4, {"resources": [
        {"resource_type": BROKER, "resource_name": resource, "configuration_keys": keys}],
        "include_synonyms": True, "include_documentation": False}, label=label, record=record)


@scenario("IncrementalAlterConfigs", versions=(1,), covers=["INVALID_REQUEST"])
def dynamic_broker_keys(s: Session, v: int):
    """Every key Kafka 4.3 may change at run time, SET (validate only) at its default on broker 1 and
    on the default broker: accepted, or refused as per-broker only or as a keystore key that needs the
    listener prefix."""
    for name in sorted(DYNAMIC_BROKER_KEYS - _OWN):
        for resource in ("1", ""):
            if resource == "" and name not in KAFKA_PER_BROKER_CONFIG_NAMES \
                    and name not in KAFKA_LISTENER_ONLY_SECURITY_CONFIG_NAMES:
                continue  # the same answer as on broker 1
            _alter(s, v, resource, [(name, SET, _value(name))], f"broker {resource!r}: SET {name}")


@scenario("IncrementalAlterConfigs", versions=(1,), covers=["INVALID_REQUEST"])
def dynamic_broker_refusals(s: Session, v: int):
    """What Kafka's reconfigurables refuse of a change (validate only, broker 1 and the default)."""
    cases = {
        "read-only keys": [("num.partitions", SET, "3"), ("log.retention.check.interval.ms", SET, "1000")],
        "a wrong type": [("log.cleaner.backoff.ms", SET, "soon")],
        "below the minimum": [("message.max.bytes", SET, "-1")],
        "num.io.threads doubled": [("num.io.threads", SET, "16")],
        "num.io.threads more than doubled": [("num.io.threads", SET, "17")],
        "num.io.threads halved": [("num.io.threads", SET, "4")],
        "num.io.threads below half": [("num.io.threads", SET, "3")],
        "num.io.threads 0": [("num.io.threads", SET, "0")],
        "num.network.threads more than doubled": [("num.network.threads", SET, "7")],
        "num.network.threads of a listener": [("listener.name.plaintext.num.network.threads", SET, "6")],
        "background.threads more than doubled": [("background.threads", SET, "21")],
        "log.cleaner.threads more than doubled": [("log.cleaner.threads", SET, "3")],
        "log.cleaner.threads doubled": [("log.cleaner.threads", SET, "2")],
        "log.cleaner.threads 0": [("log.cleaner.threads", SET, "0")],
        "log.cleaner.threads doubled with 2 MiB of dedupe buffer": [("log.cleaner.threads", SET, "2"),
                                                                    ("log.cleaner.dedupe.buffer.size", SET, "2097152")],
        "1 MiB of dedupe buffer": [("log.cleaner.dedupe.buffer.size", SET, "1048576")],
        "1 MiB and a byte of dedupe buffer": [("log.cleaner.dedupe.buffer.size", SET, "1048577")],
        "a listener's security protocol changed": [
            ("listener.security.protocol.map", SET, "PLAINTEXT:SSL,CONTROLLER:PLAINTEXT")],
        "num.replica.fetchers more than doubled": [("num.replica.fetchers", SET, "3")],
        "num.recovery.threads.per.data.dir more than doubled": [("num.recovery.threads.per.data.dir", SET, "5")],
        "max.connections 0": [("max.connections", SET, "0")],
        "max.connection.creation.rate 0": [("max.connection.creation.rate", SET, "0")],
        "max.connections of a listener": [("listener.name.plaintext.max.connections", SET, "100")],
        "local retention -1": [("log.retention.ms", SET, "100000"), ("log.local.retention.ms", SET, "-1")],
        "local retention above retention": [("log.retention.ms", SET, "100000"),
                                            ("log.local.retention.ms", SET, "200000")],
        "local retention within retention": [("log.retention.ms", SET, "100000"),
                                             ("log.local.retention.ms", SET, "50000")],
        "local retention bytes above retention": [("log.retention.bytes", SET, "1000"),
                                                  ("log.local.retention.bytes", SET, "2000")],
        "producer.id.expiration.ms": [("producer.id.expiration.ms", SET, "60000")],
        "a keystore key without the prefix": [("ssl.keystore.location", SET, "/nonexistent.pem")],
        "a keystore key of a listener that does not exist": [
            ("listener.name.nosuch.ssl.keystore.location", SET, "/nonexistent.pem")],
        "listener.security.protocol.map without the listener": [("listener.security.protocol.map", SET, "SSL:SSL")],
        "sasl.enabled.mechanisms": [("sasl.enabled.mechanisms", SET, "PLAIN")],
        "ssl.cipher.suites": [("ssl.cipher.suites", SET, "TLS_AES_128_GCM_SHA256")],
        "remote copy rate 0": [("remote.log.manager.copy.max.bytes.per.second", SET, "0")],
    }
    for resource in ("1", ""):
        for label, ops in cases.items():
            _alter(s, v, resource, ops, f"broker {resource!r}: {label}")


@scenario("IncrementalAlterConfigs", versions=(1,), covers=["MESSAGE_TOO_LARGE"])
def dynamic_broker_keys_live(s: Session, v: int):
    """message.max.bytes and log.cleaner.backoff.ms SET on broker 1 for real: described as
    DYNAMIC_BROKER_CONFIG with their synonyms, a produce over the new limit to a topic without an
    override refused, one under it accepted; a listener-prefixed quota on the default broker described
    on both resources; all deleted and the static values described again."""
    from kafka_wire.record_codec import Record, build_batch

    from ..scenario import T0

    topic = s.topic()
    s.create_topic(topic)
    keys = ["message.max.bytes", "log.cleaner.backoff.ms"]
    _alter(s, v, "1", [("message.max.bytes", SET, "2000"), ("log.cleaner.backoff.ms", SET, "100")], "SET",
           validate_only=False)
    _alter(s, v, "", [("listener.name.plaintext.max.connections", SET, "1000")], "SET a listener's quota",
           validate_only=False)

    def settled() -> bool:
        # Kafka's broker applies what its controller committed a moment after the answer.
        answer = _describe(s, "1", keys + ["listener.name.plaintext.max.connections"], record=False)
        return answer is not None and sum(c.config_source in (2, 3) for c in answer.results[0].configs) == 3

    s.wait_until(settled, what="the new values described")
    _describe(s, "1", keys + ["listener.name.plaintext.max.connections"], label="broker 1 described")
    _describe(s, "", ["listener.name.plaintext.max.connections"], label="the default broker described")

    def produce(size: int, label: str):
        batch = build_batch([Record(0, 0, b"k", b"v" * size)], base_timestamp=T0)
        s.call("Produce", 9, {"transactional_id": None, "acks": -1, "timeout_ms": 30000, "topic_data": [
            {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}, label=label)

    produce(3000, "a batch over the new message.max.bytes")
    produce(500, "a batch under it")
    _alter(s, v, "1", [(name, DELETE, None) for name in keys], "DELETE", validate_only=False)
    _alter(s, v, "", [("listener.name.plaintext.max.connections", DELETE, None)], "DELETE the listener's quota",
           validate_only=False)

    def back() -> bool:
        answer = _describe(s, "1", keys, record=False)
        return answer is not None and all(c.config_source == 5 for c in answer.results[0].configs)

    s.wait_until(back, what="the static values described again")
    _describe(s, "1", keys, label="broker 1 described after the deletes")
    produce(3000, "the same batch after the delete")
