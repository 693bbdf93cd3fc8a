"""Broker loggers (config resource type 8, KIP-412): the broker's log levels, described and changed at
run time by DescribeConfigs and IncrementalAlterConfigs, as `kafka-configs --entity-type broker-loggers`
does with Kafka's log4j loggers.

kafka-wire's loggers are Python's (`kafka_wire.broker`, `log.partition_log`, ... and `root`); their
levels are given in log4j's names, which are the names the tools and Kafka's answers use: FATAL
(Python's CRITICAL), ERROR, WARN (WARNING), INFO, DEBUG and TRACE (a level below DEBUG). As in Kafka,
changes live in the process only: a restart starts from the configured levels.
"""

from __future__ import annotations

import logging

from kafka_wire.errors import ErrorCode

from .dynamic_broker_config import BrokerConfigError, check_request_configs

ROOT = "root"
TRACE = 5  # log4j's TRACE: below Python's DEBUG
logging.addLevelName(TRACE, "TRACE")

# Kafka's Log4jController: the levels a logger may be set to, in its message's order.
VALID_LEVELS = ("DEBUG", "ERROR", "FATAL", "INFO", "TRACE", "WARN")
_TO_PYTHON = {"FATAL": logging.CRITICAL, "ERROR": logging.ERROR, "WARN": logging.WARNING, "INFO": logging.INFO,
              "DEBUG": logging.DEBUG, "TRACE": TRACE}
SET, DELETE = 0, 1
_OPERATION_NAMES = {2: "APPEND", 3: "SUBTRACT"}


class BrokerLoggerError(Exception):
    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error, self.message = error, message


def log4j_level(level: int) -> str:
    """A Python level in log4j's name (the nearest level at or below it)."""
    for name, value in (("FATAL", logging.CRITICAL), ("ERROR", logging.ERROR), ("WARN", logging.WARNING),
                        ("INFO", logging.INFO), ("DEBUG", logging.DEBUG)):
        if level >= value:
            return name
    return "TRACE"


def _logger(name: str) -> logging.Logger | None:
    if name == ROOT:
        return logging.getLogger()
    existing = logging.Logger.manager.loggerDict.get(name)
    return existing if isinstance(existing, logging.Logger) else None


def levels() -> dict[str, str]:
    """Every logger of the process (root first) with its effective level, as Kafka lists its loggers."""
    names = sorted(name for name, logger in list(logging.Logger.manager.loggerDict.items())
                   if isinstance(logger, logging.Logger))
    return {name: log4j_level(logging.getLogger(name if name != ROOT else None).getEffectiveLevel())
            for name in (ROOT, *names)}


def check_node(broker, resource_name: str, *, describe: bool) -> None:
    """Only this broker's loggers, named by its id (Kafka's wording differs between the two APIs)."""
    if describe:
        if not resource_name:
            raise BrokerLoggerError(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
        if resource_name != str(broker.node_id):
            raise BrokerLoggerError(ErrorCode.INVALID_REQUEST,
                                    f"Unexpected broker id, expected {broker.node_id} but received {resource_name}")
        return
    try:
        node = int(resource_name)
    except ValueError:
        raise BrokerLoggerError(ErrorCode.INVALID_REQUEST,
                                f"Node id must be an integer, but it is: {resource_name}") from None
    if node != broker.node_id:
        raise BrokerLoggerError(ErrorCode.INVALID_REQUEST,
                                f"Unexpected node id. Expected {broker.node_id}, but received {node}")


def _check(op) -> logging.Logger:
    """Kafka's ConfigAdminManager.validateLogLevelConfigs for one operation; the logger it changes."""
    name = op.name
    if op.config_operation == SET:
        if op.value not in VALID_LEVELS:
            raise BrokerLoggerError(ErrorCode.INVALID_CONFIG,
                                    f"Cannot set the log level of {name} to {op.value} as it is not a supported "
                                    f"log level. Valid log levels are {', '.join(VALID_LEVELS)}")
    elif op.config_operation == DELETE:
        if name == ROOT:
            raise BrokerLoggerError(ErrorCode.INVALID_REQUEST, "Removing the log level of the root logger is not allowed")
    else:
        operation = _OPERATION_NAMES.get(op.config_operation, str(op.config_operation))
        raise BrokerLoggerError(ErrorCode.INVALID_REQUEST,
                                f"{operation} operation is not allowed for the BROKER_LOGGER resource")
    logger = _logger(name)
    if logger is None:
        raise BrokerLoggerError(ErrorCode.INVALID_CONFIG, f"Logger {name} does not exist!")
    return logger


def alter(broker, resource_name: str, ops, validate_only: bool) -> tuple[ErrorCode, str | None]:
    """IncrementalAlterConfigs on a BROKER_LOGGER resource: every operation checked, then applied."""
    try:
        check_request_configs([op.name for op in ops],
                              [op.name for op in ops if op.config_operation != DELETE and op.value is None])
        check_node(broker, resource_name, describe=False)
        changes = [(_check(op), op) for op in ops]
    except (BrokerLoggerError, BrokerConfigError) as exc:
        return exc.error, exc.message
    if not validate_only:
        for logger, op in changes:
            # Unset: the logger follows its parent again (root's level unless a parent has its own).
            logger.setLevel(_TO_PYTHON[op.value] if op.config_operation == SET else logging.NOTSET)
            logging.getLogger("kafka_wire.broker").info("log level of %s %s", op.name,
                                             f"set to {op.value}" if op.config_operation == SET else "unset")
    return ErrorCode.NONE, None
