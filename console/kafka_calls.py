"""The console's way into the broker: Kafka API requests answered by the broker's own handlers.

Every page's data comes from the same handlers a Kafka client reaches (broker/handlers/), called
in-process with a RequestContext that carries the console user's principal, so the console sees
what that user's Kafka client would see: the same ACL checks, the same error codes, the same read
path for records (Fetch). Requests are built from plain dicts into the generated message classes
(kafka_wire.messages), with each field's default for what a dict leaves out.
"""

from __future__ import annotations

import itertools

from broker.handlers import HANDLERS
from broker.server import RequestContext
from broker.workers import routing
from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME
from kafka_wire.schema import Array, StructType, Struct

CLIENT_ID = "kafka-wire-console"
# Console requests get connection ids of their own, far from the server's (which count up from 1).
_connection_ids = itertools.count(1 << 40)


class KafkaError(Exception):
    """A Kafka error code the console answers with (HTTP status chosen by console/api.py)."""

    def __init__(self, error: ErrorCode | int, message: str | None = None) -> None:
        self.error = ErrorCode(error)
        self.message = message or self.error.name
        super().__init__(f"{self.error.name}: {self.message}")


def _build(struct: StructType, values: dict) -> Struct:
    kwargs = {}
    for field in struct.fields:
        if field.name not in values:
            continue
        value = values[field.name]
        inner = field.type.item if isinstance(field.type, Array) else field.type
        if isinstance(inner, StructType) and value is not None:
            value = [_build(inner, v) for v in value] if isinstance(field.type, Array) else _build(inner, value)
        kwargs[field.name] = value
    unknown = set(values) - {f.name for f in struct.fields}
    if unknown:
        raise TypeError(f"{struct.name} has no fields {sorted(unknown)}")
    return struct.cls(**kwargs)


def _plain(value):
    if isinstance(value, Struct):
        return {k: _plain(v) for k, v in value.to_dict().items()}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


class KafkaCalls:
    """Kafka API calls on behalf of one console user (principal) from one address (peer)."""

    def __init__(self, broker, principal: str, peer: tuple, listener: str | None = None) -> None:
        self.broker = broker
        self.principal = principal
        self.peer = peer
        # Brokers' endpoints in answers are those of the first listener, as a client of it sees them.
        self.listener = listener or broker.config.listeners()[0][0]
        self.connection_id = next(_connection_ids)
        self._correlation = itertools.count(1)

    async def call(self, api_name: str, version: int, **fields) -> dict:
        """The handler's answer as plain dicts and lists (records stay as the handler gave them)."""
        api = APIS_BY_NAME[api_name]
        handler = HANDLERS[api.key]
        if not handler.supports(version):
            raise ValueError(f"{api_name} v{version} is not served")
        request = _build(api.request.struct, fields)
        ctx = RequestContext(api.key, version, next(self._correlation), CLIENT_ID, self.listener, self.peer,
                             self.connection_id, principal=self.principal)
        if getattr(self.broker, "workers", None) is None:
            return _plain(await handler.handle(self.broker, ctx, request))
        # A broker of several workers: answered where a client's request would be (broker/workers/).
        response = await routing.served(self.broker, handler, ctx, request)
        return _plain(routing.decoded(api, ctx, response))


def check(error_code: int, what: str = "") -> None:
    """Raise KafkaError for a non-zero error code."""
    if error_code:
        error = ErrorCode(error_code)
        raise KafkaError(error, f"{what}: {error.name}" if what else error.name)
