"""`kafka-wire --log-format json`: one JSON object per log line, for log shippers (Loki, ELK,
CloudWatch) that index fields instead of parsing text.

    {"time": "2026-11-22T13:42:06.106Z", "level": "INFO", "logger": "kafka_wire.server",
     "message": "listening on PLAINTEXT://127.0.0.1:9092"}

A record's exception goes in "exception" (the formatted traceback); attributes given with
`extra={...}` are kept as fields of their own.
"""

from __future__ import annotations

import json
import logging
import time

# Attributes every LogRecord has; anything else on a record came from `extra=` and is kept.
_STANDARD_ATTRIBUTES = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


class JsonLogFormatter(logging.Formatter):
    """Formats a record as one line of JSON: time (UTC, ISO 8601, ms), level, logger, message."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD_ATTRIBUTES and key not in entry:
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


def configure_logging(level: int, log_format: str, stream) -> None:
    """Log to `stream` as text (Kafka-like lines) or as JSON lines."""
    handler = logging.StreamHandler(stream)
    if log_format == "json":
        handler.setFormatter(JsonLogFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s [%(name)s] %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])
