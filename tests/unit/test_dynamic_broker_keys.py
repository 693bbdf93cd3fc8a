"""Every dynamic broker config Kafka 4.3 has, without a server: which names a change may carry and where,
what Kafka's reconfigurables refuse of a change (with Kafka 4.3's messages, as its broker answers them:
compat/conformance/scenarios/dynamic_broker_keys.py compares the answers with the reference Kafka), how
listener-prefixed keys are described, and that what kafka-wire uses is applied live: the cleaner's
backoff (in the wait under way), a TLS listener's key store, a SASL listener's mechanisms."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
from types import SimpleNamespace as NS

import pytest

from broker.config import (BROKER_KEYS, DYNAMIC_BROKER_KEYS, BrokerConfig, ConfigError, ConfigSource, ConfigType,
                           broker_synonyms, validate_dynamic_broker_configs)
from broker.dynamic_broker_config import apply_dynamic_broker_configs, validate_reconfiguration
from broker.kafka_config_names import (KAFKA_DYNAMIC_BROKER_CONFIG_NAMES, KAFKA_LISTENER_ONLY_SECURITY_CONFIG_NAMES,
                                       KAFKA_PER_BROKER_CONFIG_NAMES)
from broker.security.listeners import listener_security
from log.cleaner import LogCleaner

WRAPPED = "Invalid value org.apache.kafka.common.config.ConfigException: {} for configuration Invalid dynamic configuration"
LISTENERS = {"listeners": "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093"}


def change(config: BrokerConfig, props: dict[str, str], per_broker: bool = True) -> None:
    """What the broker checks of a change of one resource's dynamic configs (dynamic_broker_config.alter_broker_configs)."""
    validate_dynamic_broker_configs(props, per_broker)
    new = config.overlaid(config.dynamic_default, props) if per_broker else config.overlaid(props, config.dynamic_broker)
    validate_reconfiguration(config, new)


def refusal(config: BrokerConfig, props: dict[str, str], per_broker: bool = True) -> str:
    with pytest.raises(ConfigError) as refused:
        change(config, props, per_broker)
    return str(refused.value)


def default_value(name: str) -> str:
    key = BROKER_KEYS[name]
    if key.default is None:
        return "1000" if key.type in (ConfigType.INT, ConfigType.LONG) else "x"
    return key.render(key.default)


def test_every_key_kafka_changes_at_run_time_is_dynamic_here():
    """Before: log.cleaner.backoff.ms, num.io.threads, listeners, the ssl.* keys, ... answered "Cannot update
    these configs dynamically". Now every one of Kafka 4.3's 99 is accepted at its default, per broker;
    the per-broker ones are refused at the cluster default, the keystore ones without a listener prefix."""
    assert DYNAMIC_BROKER_KEYS == KAFKA_DYNAMIC_BROKER_CONFIG_NAMES and len(DYNAMIC_BROKER_KEYS) == 99
    config = BrokerConfig(LISTENERS)
    for name in sorted(DYNAMIC_BROKER_KEYS - KAFKA_LISTENER_ONLY_SECURITY_CONFIG_NAMES - {"listeners"}):
        change(config, {name: default_value(name)})
        if name in KAFKA_PER_BROKER_CONFIG_NAMES:
            assert refusal(config, {name: default_value(name)}, per_broker=False) == \
                f"Cannot update these configs at default cluster level, broker id must be specified: [{name}]"
        else:
            change(config, {name: default_value(name)}, per_broker=False)
    for name in sorted(KAFKA_LISTENER_ONLY_SECURITY_CONFIG_NAMES):
        assert refusal(config, {name: "x"}).startswith("These security configs can be dynamically updated only "
                                                       f"per-listener using the listener prefix: [{name}")
    change(config, {"log.cleaner.backoff.ms": "100", "message.max.bytes": "2000"}, per_broker=False)


def test_read_only_and_kafka_wire_keys_are_refused_as_kafka_refuses_read_only_keys():
    config = BrokerConfig({})
    for name in ("num.partitions", "log.retention.hours", "log.retention.check.interval.ms", "log.cleaner.enable",
                 "log.flush.on.ack", "num.worker.processes"):
        assert refusal(config, {name: default_value(name)}) == f"Cannot update these configs dynamically: [{name}]"


def test_values_are_checked_by_their_type_a_listener_prefixed_one_by_its_base_key():
    config = BrokerConfig(LISTENERS)
    assert refusal(config, {"log.cleaner.backoff.ms": "soon"}) == \
        "Invalid value soon for configuration log.cleaner.backoff.ms: Not a number of type LONG"
    assert refusal(config, {"num.io.threads": "0"}) == \
        "Invalid value 0 for configuration num.io.threads: Value must be at least 1"
    assert refusal(config, {"remote.log.manager.copy.max.bytes.per.second": "0"}) == \
        "Invalid value 0 for configuration remote.log.manager.copy.max.bytes.per.second: Value must be at least 1"
    assert refusal(config, {"listener.name.plaintext.max.connections": "ten"}) == \
        "Invalid value ten for configuration max.connections: Not a number of type INT"


@pytest.mark.parametrize("props, reason", [
    ({"num.io.threads": "17"}, "Dynamic thread count update validation failed for num.io.threads=17, value should "
                               "not be greater than double the current value 8"),
    ({"num.io.threads": "3"}, "Dynamic thread count update validation failed for num.io.threads=3, value should be "
                              "at least half the current value 8"),
    ({"background.threads": "21"}, "Dynamic thread count update validation failed for background.threads=21, value "
                                   "should not be greater than double the current value 10"),
    ({"num.network.threads": "7"}, "Dynamic thread count update validation failed for num.network.threads=7, value "
                                   "should not be greater than double the current value 3"),
    ({"listener.name.plaintext.num.network.threads": "7"},
     "Dynamic thread count update validation failed for num.network.threads=7, value should not be greater than "
     "double the current value 3"),
    ({"log.cleaner.threads": "3"}, "Log cleaner threads cannot be increased to more than double the current value 1"),
    ({"max.connections": "0"}, "Invalid max.connections 0"),
    ({"listener.name.plaintext.max.connection.creation.rate": "0"}, "Invalid max.connection.creation.rate 0"),
    ({"log.retention.ms": "100000", "log.local.retention.ms": "-1"},
     "Invalid value -1 for configuration log.local.retention.ms: Value must not be -1 as log.retention.ms value is "
     "set as 100000."),
    ({"log.retention.ms": "100000", "log.local.retention.ms": "200000"},
     "Invalid value 200000 for configuration log.local.retention.ms: Value must not be more than log.retention.ms "
     "property value: 100000"),
    ({"log.retention.bytes": "1000", "log.local.retention.bytes": "2000"},
     "Invalid value 2000 for configuration log.local.retention.bytes: Value must not be more than "
     "log.retention.bytes property value: 1000"),
    ({"listener.security.protocol.map": "PLAINTEXT:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"},
     "Security protocol cannot be updated for existing listener ListenerName(PLAINTEXT)"),
    ({"listeners": "PLAINTEXT://127.0.0.1:9092"},
     "Advertised listeners cannot be altered when using a Raft-based metadata quorum."),
])
def test_what_kafkas_reconfigurables_refuse(props, reason):
    assert refusal(BrokerConfig(LISTENERS), props) == WRAPPED.format(reason)


def test_changes_within_the_bounds_and_kafkas_own_config_checks():
    config = BrokerConfig(LISTENERS)
    for props in ({"num.io.threads": "16"}, {"num.io.threads": "4"}, {"log.cleaner.threads": "2",
                  "log.cleaner.dedupe.buffer.size": "2097154"}, {"listener.name.plaintext.num.network.threads": "1"},
                  {"log.retention.ms": "100000", "log.local.retention.ms": "50000"}, {"sasl.enabled.mechanisms": ""},
                  {"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL"}):
        change(config, props)
    # The bounds are the running value's: after a change to 16 threads, 32 is within them.
    config.set_dynamic({}, {"num.io.threads": "16"})
    change(config, {"num.io.threads": "32"})
    assert refusal(config, {"log.cleaner.threads": "2", "log.cleaner.dedupe.buffer.size": "2097153"}) == \
        "requirement failed: log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread."
    assert refusal(config, {"log.cleaner.dedupe.buffer.size": "1048576"}) == \
        "requirement failed: log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread."
    assert refusal(config, {"log.cleaner.threads": "0"}) == "/ by zero"
    assert refusal(config, {"listener.security.protocol.map": "SSL:SSL"}) == (
        "Error creating broker listeners from '[PLAINTEXT://127.0.0.1:9092, SASL_PLAINTEXT://127.0.0.1:9093]': "
        "No security protocol defined for listener PLAINTEXT")
    # Advertised listeners set statically and kept: Kafka would bind the new listener; kafka-wire binds at start.
    config = BrokerConfig({**LISTENERS, "advertised.listeners": "PLAINTEXT://127.0.0.1:9092"})
    assert refusal(config, {"listeners": "PLAINTEXT://127.0.0.1:9092"}).startswith(
        "Invalid dynamic configuration: kafka-wire binds its listeners when it starts")


def test_listener_prefixed_keys_are_described_with_their_base_keys_synonyms():
    config = BrokerConfig({"max.connections": "500", "listener.name.plaintext.num.network.threads": "4"})
    config.set_dynamic({"listener.name.plaintext.max.connections": "100"}, {})
    name = "listener.name.plaintext.max.connections"
    assert broker_synonyms(name) == (name, "max.connections")
    assert broker_synonyms("listener.name.sasl_ssl.plain.sasl.jaas.config") == (
        "listener.name.sasl_ssl.plain.sasl.jaas.config", "sasl.jaas.config")
    assert config.config_synonyms(name, broker_synonyms(name)) == [
        (name, "100", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("max.connections", "500", ConfigSource.STATIC_BROKER_CONFIG),
        ("max.connections", "2147483647", ConfigSource.DEFAULT_CONFIG)]
    threads = "listener.name.plaintext.num.network.threads"
    assert config.config_synonyms(threads, broker_synonyms(threads))[0] == (
        threads, "4", ConfigSource.STATIC_BROKER_CONFIG)
    # And read where the listener's settings are read.
    assert config.original[name] == "100"
    config.set_dynamic({}, {})
    assert name not in config.original and config.original[threads] == "4"


def test_a_new_cleaner_backoff_applies_to_the_wait_under_way(monkeypatch):
    """Before: run() read log.cleaner.backoff.ms once, when it started."""
    monkeypatch.setattr("log.cleaner.BACKOFF_PEEK_SECONDS", 0.01)
    asyncio.run(_backoff_changed_while_waiting())


async def _backoff_changed_while_waiting():
    cleaner = LogCleaner(NS(log_values=lambda: []))
    rounds = []

    async def clean_filthiest_log_async():
        rounds.append(asyncio.get_running_loop().time())

    cleaner.clean_filthiest_log_async = clean_filthiest_log_async
    task = asyncio.create_task(cleaner.run(True, 3_600_000))
    await asyncio.sleep(0.2)
    assert len(rounds) == 1  # waiting its hour
    broker = NS(config=BrokerConfig({}), node_id=1, logs=NS(cleaner=cleaner, default_config=None),
                metadata=NS(broker_configs={"1": {"log.cleaner.backoff.ms": "20"}}, topics={}))
    apply_dynamic_broker_configs(broker)
    assert cleaner.backoff_ms == 20
    await asyncio.sleep(0.3)
    cleaner.stop()
    await asyncio.wait_for(task, 2)
    assert len(rounds) >= 5


def _certificate(folder, name: str):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", f"{name}.key", "-out", f"{name}.crt", "-days", "2", "-subj", f"/CN={name}"],
                   cwd=folder, check=True, capture_output=True, timeout=30)
    pem = folder / f"{name}.pem"
    pem.write_text((folder / f"{name}.key").read_text() + (folder / f"{name}.crt").read_text())
    return pem, folder / f"{name}.crt"


def _handshake(server_ctx: ssl.SSLContext, trusted) -> bool:
    client_ctx = ssl.create_default_context(cafile=str(trusted))
    client_ctx.check_hostname = False
    bios = [ssl.MemoryBIO() for _ in range(4)]
    client = client_ctx.wrap_bio(bios[0], bios[1])
    server = server_ctx.wrap_bio(bios[2], bios[3], server_side=True)
    done = {"client": False, "server": False}
    for _ in range(10):
        for side, obj in (("client", client), ("server", server)):
            if not done[side]:
                try:
                    obj.do_handshake()
                    done[side] = True
                except ssl.SSLWantReadError:
                    pass
                except ssl.SSLError:
                    return False
        bios[2].write(bios[1].read())
        bios[0].write(bios[3].read())
        if all(done.values()):
            return True
    return False


def test_a_tls_listener_serves_new_connections_with_its_new_key_store(tmp_path):
    if not shutil.which("openssl"):
        pytest.skip("the openssl command line is needed to make test certificates")
    first, first_cert = _certificate(tmp_path, "first")
    second, second_cert = _certificate(tmp_path, "second")
    config = BrokerConfig({"listeners": "SSL://127.0.0.1:9093,SASL_PLAINTEXT://127.0.0.1:9094",
                           "listener.name.ssl.ssl.keystore.location": str(first)})
    tls, sasl = listener_security(config, "SSL"), listener_security(config, "SASL_PLAINTEXT")
    assert _handshake(tls.ssl_context, first_cert) and not _handshake(tls.ssl_context, second_cert)
    # A key store that cannot be loaded is refused before it is stored.
    assert refusal(config, {"listener.name.ssl.ssl.keystore.location": str(tmp_path / "missing.pem")}).startswith(
        WRAPPED.format("Validation of dynamic config update of SSLFactory failed: cannot load")[:95])
    stored = {"listener.name.ssl.ssl.keystore.location": str(second),
              "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN"}
    change(config, stored)
    broker = NS(config=config, node_id=1, logs=NS(cleaner=None, default_config=None),
                server=NS(quotas=None, listener_securities={"SSL": tls, "SASL_PLAINTEXT": sasl}),
                metadata=NS(broker_configs={"1": stored}, topics={}))
    apply_dynamic_broker_configs(broker)
    assert _handshake(tls.ssl_context, second_cert) and not _handshake(tls.ssl_context, first_cert)
    assert sasl.mechanisms == ("PLAIN",)
    broker.metadata.broker_configs = {}
    apply_dynamic_broker_configs(broker)
    assert _handshake(tls.ssl_context, first_cert)
    assert sasl.mechanisms == ("SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN")
