"""docker/: the entrypoint's KAFKA_* -> server.properties mapping (the convention of Confluent's and
Apache's Kafka images, and Bitnami's KAFKA_CFG_), checked against the broker's own properties
reader, and the compose file and Dockerfile linted (no Docker engine is needed)."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path

import pytest

from broker.config import BROKER_KEYS, BrokerConfig, parse_properties

REPO = Path(__file__).resolve().parents[2]
DOCKER = REPO / "docker"


def _load(name: str):
    # docker/ is not a package (and "docker" is also the Docker SDK's name): load by path.
    spec = importlib.util.spec_from_file_location(f"kafka_wire_docker_{name}", DOCKER / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


entrypoint = _load("entrypoint")


@pytest.mark.parametrize("env_name, prop", [
    ("KAFKA_LOG_DIRS", "log.dirs"),
    ("KAFKA_ADVERTISED_LISTENERS", "advertised.listeners"),
    ("KAFKA_ZOOKEEPER_CONNECT", "zookeeper.connect"),
    ("KAFKA_BROKER_ID", "broker.id"),
    ("KAFKA_LOG_RETENTION_HOURS", "log.retention.hours"),
    # Double underscore is a literal underscore, triple a dash (Confluent's rule).
    ("KAFKA_LISTENER_NAME_EXTERNAL_SSL_KEYSTORE__TYPE", "listener.name.external.ssl.keystore_type"),
    ("KAFKA_LISTENER_NAME_INTERNAL_PLAIN___CALLBACK", "listener.name.internal.plain-callback"),
    # Bitnami's prefix.
    ("KAFKA_CFG_NUM_PARTITIONS", "num.partitions"),
    ("KAFKA_CFG_AUTO_CREATE_TOPICS_ENABLE", "auto.create.topics.enable"),
])
def test_environment_variable_names_map_to_properties(env_name, prop):
    assert entrypoint.property_name(env_name) == prop


@pytest.mark.parametrize("env_name", [
    "KAFKA_HEAP_OPTS", "KAFKA_OPTS", "KAFKA_JMX_PORT", "KAFKA_LOG4J_ROOT_LOGLEVEL", "KAFKA_VERSION",
    "KAFKA_WIRE_LOG_FORMAT", "KAFKA_WIRE_PROPERTIES", "KAFKA_", "KAFKA_CFG_", "PATH", "HOSTNAME", "ZOO_MY_ID",
])
def test_jvm_tooling_and_other_variables_are_not_properties(env_name):
    assert entrypoint.property_name(env_name) is None


def test_bitnami_prefix_wins_over_the_plain_one():
    props = entrypoint.env_to_properties({"KAFKA_NUM_PARTITIONS": "1", "KAFKA_CFG_NUM_PARTITIONS": "6",
                                          "KAFKA_HEAP_OPTS": "-Xmx1G"})
    assert props == {"num.partitions": "6"}


def test_defaults_listen_everywhere_and_advertise_the_host_name():
    props = entrypoint.broker_properties({}, "broker7")
    assert props["listeners"] == "PLAINTEXT://0.0.0.0:9092"
    assert props["advertised.listeners"] == "PLAINTEXT://broker7:9092"
    assert props["log.dirs"] == "/var/lib/kafka-wire/data"
    assert props["metrics.host"] == "0.0.0.0"


def test_given_listeners_are_not_second_guessed():
    props = entrypoint.broker_properties({"KAFKA_LISTENERS": "PLAINTEXT://0.0.0.0:9093",
                                          "KAFKA_LOG_DIRS": "/data"}, "host")
    assert props["listeners"] == "PLAINTEXT://0.0.0.0:9093"
    assert "advertised.listeners" not in props  # the broker's own default (listeners) applies
    assert props["log.dirs"] == "/data"


def test_written_properties_read_back_as_the_broker_reads_them():
    environ = {
        "KAFKA_BROKER_ID": "3",
        "KAFKA_LISTENERS": "PLAINTEXT://0.0.0.0:9092,EXTERNAL://0.0.0.0:19092",
        "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://broker3:9092,EXTERNAL://localhost:19092",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT",
        "KAFKA_ZOOKEEPER_CONNECT": "zookeeper:2181/kafka",
        "KAFKA_LOG_RETENTION_MS": "86400000",
        "KAFKA_SASL_JAAS_CONFIG": 'org.apache.kafka.common.security.plain.PlainLoginModule required username="a b";',
        "KAFKA_METRICS_PORT": "9404",
    }
    props = entrypoint.broker_properties(environ, "broker3")
    text = entrypoint.render_properties(props)
    assert parse_properties(text) == props
    config = BrokerConfig(parse_properties(text))
    assert config.node_id == 3
    assert config.listeners() == [("PLAINTEXT", "0.0.0.0", 9092), ("EXTERNAL", "0.0.0.0", 19092)]
    assert config.advertised_listeners()[1] == ("EXTERNAL", "localhost", 19092)
    assert config["zookeeper.connect"] == "zookeeper:2181/kafka"
    assert config["metrics.port"] == 9404 and config["metrics.host"] == "0.0.0.0"
    assert config.retention_ms() == 86400000


def test_a_value_with_a_line_break_is_refused():
    with pytest.raises(ValueError, match="line break"):
        entrypoint.render_properties({"log.dirs": "/a\n/b"})


def test_serve_command_maps_log4j_level_and_log_format():
    command = entrypoint.serve_command({"KAFKA_LOG4J_ROOT_LOGLEVEL": "WARN", "KAFKA_WIRE_LOG_FORMAT": "json"},
                                       "/etc/kafka-wire/server.properties", ["--set", "num.partitions=2"])
    assert command == ["kafka-wire", "--log-level", "WARNING", "--log-format", "json", "serve",
                       "--config", "/etc/kafka-wire/server.properties", "--set", "num.partitions=2"]
    assert entrypoint.serve_command({}, "/p", []) == ["kafka-wire", "serve", "--config", "/p"]


# -- the compose file -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose():
    yaml = pytest.importorskip("yaml")
    return yaml.safe_load((DOCKER / "docker-compose.yml").read_text())


def _brokers(compose) -> dict:
    return {name: svc for name, svc in compose["services"].items() if name.startswith("broker")}


def test_compose_has_zookeeper_three_brokers_and_a_spark_job(compose):
    services = compose["services"]
    assert "zookeeper" in services
    assert sorted(_brokers(compose)) == ["broker1", "broker2", "broker3"]
    spark = services["spark-order-totals"]
    assert spark["build"]["target"] == "spark"
    assert spark["command"][:3] == ["python", "-m", "pipelines.order_totals_stream"]
    assert importlib.util.find_spec("pipelines.order_totals_stream") is not None


def test_compose_brokers_set_only_properties_the_broker_knows(compose):
    ids, host_ports = set(), []
    for name, service in _brokers(compose).items():
        env = {k: str(v) for k, v in service["environment"].items()}
        props = entrypoint.env_to_properties(env)
        unknown = sorted(p for p in props if p not in BROKER_KEYS)
        assert not unknown, f"{name} sets properties kafka-wire does not know: {unknown}"
        assert props["zookeeper.connect"] == "zookeeper:2181"  # cluster mode
        assert props["default.replication.factor"] == "3" and props["min.insync.replicas"] == "2"
        ids.add(props["broker.id"])
        config = BrokerConfig(entrypoint.broker_properties(env, name))
        listener_names = {listener[0] for listener in config.listeners()}
        assert {a[0] for a in config.advertised_listeners()} == listener_names
        assert ("PLAINTEXT", name, 9092) in config.advertised_listeners()  # other containers use this
        for listener in listener_names:
            assert config.security_protocol(listener) == "PLAINTEXT"
        host_ports += [p.split(":")[0] for p in service["ports"]]
    assert len(ids) == 3, "broker ids must differ"
    assert len(host_ports) == len(set(host_ports)), "host ports must differ"


def test_compose_spark_job_arguments_parse(compose):
    pytest.importorskip("pyspark")
    from pipelines.order_totals_stream import parse_arguments

    command = compose["services"]["spark-order-totals"]["command"]
    args = parse_arguments(command[3:])
    assert args.bootstrap_servers == "broker1:9092,broker2:9092,broker3:9092" and args.topic == "orders"
    assert args.packages  # bare --packages: the Kafka connector from Maven Central


def test_sample_orders_have_the_shape_the_pipeline_reads():
    import json

    lines = _load("sample_orders").sample_orders(20)
    assert len(lines) == 20
    for line in lines:
        key, value = line.split("|", 1)
        assert key.startswith("customer-")
        order = json.loads(value)
        assert set(order) == {"order_id", "amount_cents"} and isinstance(order["amount_cents"], int)


def test_dockerfile_installs_with_the_readme_steps_and_runs_the_entrypoint():
    dockerfile = (DOCKER / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim\S* AS broker$", dockerfile, re.M)
    assert "RUN bash scripts/setup.sh" in dockerfile
    assert "scripts/setup.sh" in (REPO / "scripts" / "serve.sh").read_text()  # what the README runs
    assert 'ENTRYPOINT ["python", "/opt/kafka-wire/docker/entrypoint.py"]' in dockerfile
    for source in re.findall(r"^COPY (\S+)", dockerfile, re.M):
        if not source.startswith("--"):
            assert (REPO / source).exists(), f"Dockerfile copies {source}, which does not exist"
    # Every package pyproject installs is copied in.
    with open(REPO / "pyproject.toml", "rb") as f:
        packages = [p.rstrip("*") for p in tomllib.load(f)["tool"]["setuptools"]["packages"]["find"]["include"]]
    assert {"kafka_wire", "log", "coordinator", "broker", "console"} <= set(packages)
    for package in packages:
        assert f"COPY {package}/ {package}/" in dockerfile, package
