"""`kafka-wire --log-format json`: every log line is one JSON object with the fields shippers index."""

from __future__ import annotations

import io
import json
import logging

from cli.structured_logs import JsonLogFormatter


def _logger(stream) -> logging.Logger:
    logger = logging.getLogger("kafka_wire.test_structured_logs")
    logger.handlers.clear()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonLogFormatter())
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    return logger


def test_one_json_object_per_line_with_time_level_logger_message_and_extras():
    stream = io.StringIO()
    logger = _logger(stream)
    logger.info("listening on %s://%s:%d", "PLAINTEXT", "127.0.0.1", 9092, extra={"listener": "PLAINTEXT"})
    logger.warning("line one\nline two ünïcode")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2  # a message with a newline stays on one line
    first, second = (json.loads(line) for line in lines)
    assert first["message"] == "listening on PLAINTEXT://127.0.0.1:9092"
    assert first["level"] == "INFO" and first["logger"] == "kafka_wire.test_structured_logs"
    assert first["listener"] == "PLAINTEXT"
    assert first["time"].endswith("Z") and "T" in first["time"]
    assert second["message"] == "line one\nline two ünïcode"
    assert "args" not in first and "msg" not in first  # LogRecord internals are not leaked


def test_exceptions_are_a_field():
    stream = io.StringIO()
    logger = _logger(stream)
    try:
        raise ValueError("boom")
    except ValueError:
        logger.exception("error handling %s v%d", "Fetch", 12)
    entry = json.loads(stream.getvalue())
    assert entry["message"] == "error handling Fetch v12"
    assert entry["level"] == "ERROR"
    assert "ValueError: boom" in entry["exception"] and "Traceback" in entry["exception"]
