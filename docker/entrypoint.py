"""The image's entrypoint: KAFKA_* environment variables become server.properties, then
`kafka-wire serve` runs with them, as in the common Kafka images.

The mapping is theirs (Confluent's cp-kafka, Apache's apache/kafka; Bitnami's KAFKA_CFG_ prefix
works too): drop the prefix, lower-case, then `___` -> `-`, `__` -> `_`, `_` -> `.`:

    KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://broker1:9092   advertised.listeners
    KAFKA_LOG_DIRS=/var/lib/kafka-wire/data               log.dirs
    KAFKA_CFG_NUM_PARTITIONS=3                            num.partitions
    KAFKA_LISTENER_NAME_EXTERNAL_SSL_KEYSTORE__TYPE=PKCS12 listener.name.external.ssl.keystore_type

Variables the Kafka images use for the JVM and log4j (KAFKA_HEAP_OPTS, KAFKA_OPTS, ...) are not
properties and are skipped; KAFKA_LOG4J_ROOT_LOGLEVEL sets the log level. Our own settings are
KAFKA_WIRE_*: KAFKA_WIRE_LOG_FORMAT=json (structured logs), KAFKA_WIRE_PROPERTIES (where the
generated file goes).

Without KAFKA_LISTENERS the broker listens on PLAINTEXT://0.0.0.0:9092 and, without
KAFKA_ADVERTISED_LISTENERS too, advertises the container's host name. Arguments after the image
name are passed to `kafka-wire serve` (e.g. `--set key=value`); a first argument that is not an
option runs that command instead (`docker run IMAGE bash`).

Standard library only: it runs before anything else, with any Python 3.
"""

from __future__ import annotations

import os
import socket
import sys

PREFIXES = ("KAFKA_CFG_", "KAFKA_")
# Our own variables, and the Kafka images' JVM/log4j/tooling ones: not broker properties.
NOT_PROPERTIES = {
    "KAFKA_VERSION", "KAFKA_HEAP_OPTS", "KAFKA_OPTS", "KAFKA_JMX_OPTS", "KAFKA_JMX_HOSTNAME", "KAFKA_JMX_PORT",
    "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_GC_LOG_OPTS", "KAFKA_LOG4J_OPTS", "KAFKA_LOG4J_ROOT_LOGLEVEL",
    "KAFKA_LOG4J_LOGGERS", "KAFKA_TOOLS_LOG4J_LOGLEVEL", "KAFKA_DEBUG", "KAFKA_HOME",
}
OWN_PREFIX = "KAFKA_WIRE_"
DEFAULT_PROPERTIES_FILE = "/etc/kafka-wire/server.properties"
DEFAULT_DATA_DIR = "/var/lib/kafka-wire/data"
DEFAULT_PORT = 9092
# log4j level names -> Python's
LOG_LEVELS = {"TRACE": "DEBUG", "DEBUG": "DEBUG", "INFO": "INFO", "WARN": "WARNING", "WARNING": "WARNING",
              "ERROR": "ERROR", "FATAL": "CRITICAL", "OFF": "CRITICAL"}


def property_name(env_name: str) -> str | None:
    """The broker property an environment variable sets, or None when it sets none."""
    if env_name in NOT_PROPERTIES or env_name.startswith(OWN_PREFIX):
        return None
    prefix = next((p for p in PREFIXES if env_name.startswith(p)), None)
    if prefix is None or len(env_name) == len(prefix):
        return None
    raw = env_name[len(prefix):].lower()
    # Confluent's order: single underscores to dots first, then the runs they left behind.
    return raw.replace("_", ".").replace("...", "-").replace("..", "_")


def env_to_properties(environ) -> dict[str, str]:
    """Broker properties from KAFKA_* variables (KAFKA_CFG_X wins over KAFKA_X for the same key)."""
    plain: dict[str, str] = {}
    bitnami: dict[str, str] = {}
    for env_name, value in sorted(environ.items()):
        name = property_name(env_name)
        if name is None:
            continue
        (bitnami if env_name.startswith("KAFKA_CFG_") else plain)[name] = value
    return {**plain, **bitnami}


def broker_properties(environ, hostname: str) -> dict[str, str]:
    """What the container's broker runs with: the image's defaults, then the environment."""
    props = env_to_properties(environ)
    defaults = {"log.dirs": DEFAULT_DATA_DIR, "metrics.host": "0.0.0.0"}
    if "listeners" not in props:
        defaults["listeners"] = f"PLAINTEXT://0.0.0.0:{DEFAULT_PORT}"
        if "advertised.listeners" not in props:
            # 0.0.0.0 cannot be advertised; other containers reach this one by its host name.
            defaults["advertised.listeners"] = f"PLAINTEXT://{hostname}:{DEFAULT_PORT}"
    return {**defaults, **props}


def render_properties(props: dict[str, str]) -> str:
    """server.properties text (sorted; a value may not span lines)."""
    lines = ["# Written by the kafka-wire image's entrypoint from KAFKA_* environment variables."]
    for key in sorted(props):
        value = props[key]
        if "\n" in value or "\r" in value:
            raise ValueError(f"{key}: a property value cannot contain a line break")
        lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"


def serve_command(environ, properties_file: str, extra_args: list[str]) -> list[str]:
    """The kafka-wire command line the container runs."""
    command = ["kafka-wire"]
    level = environ.get("KAFKA_LOG4J_ROOT_LOGLEVEL")
    if level:
        command += ["--log-level", LOG_LEVELS.get(level.strip().upper(), level.strip().upper())]
    log_format = environ.get("KAFKA_WIRE_LOG_FORMAT")
    if log_format:
        command += ["--log-format", log_format]
    return command + ["serve", "--config", properties_file, *extra_args]


def main(argv: list[str]) -> None:
    if argv and not argv[0].startswith("-"):
        os.execvp(argv[0], argv)  # `docker run IMAGE bash`: run that instead
    environ = dict(os.environ)
    properties_file = environ.get("KAFKA_WIRE_PROPERTIES", DEFAULT_PROPERTIES_FILE)
    props = broker_properties(environ, socket.gethostname())
    os.makedirs(os.path.dirname(properties_file) or ".", exist_ok=True)
    with open(properties_file, "w") as out:
        out.write(render_properties(props))
    for log_dir in props["log.dirs"].split(","):
        if log_dir.strip():
            os.makedirs(log_dir.strip(), exist_ok=True)
    command = serve_command(environ, properties_file, argv)
    print(f"kafka-wire entrypoint: {' '.join(command)} ({len(props)} properties in {properties_file})",
          file=sys.stderr, flush=True)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
