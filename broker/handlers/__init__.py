"""The API handlers: one module per API, named by key and name (p00_produce.py, p01_fetch.py, ...).

Each module defines `API` (from kafka_wire.messages) and `async def handle(broker, ctx, request)`
returning the response (None for acks=0 produce), and may narrow the versions it serves with
`VERSIONS = (min, max)`, and with `def served(broker) -> bool` the brokers that serve it at all (an
API Kafka serves in KRaft mode only). ApiVersions advertises exactly what is registered here and
served; a request for an API not served closes the connection, as Kafka does.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from kafka_wire.schema import Api


@dataclass(frozen=True)
class Handler:
    api: Api
    min_version: int
    max_version: int
    handle: Callable[..., Awaitable[Any]]
    served: Callable[[Any], bool] | None = None

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version

    def served_by(self, broker) -> bool:
        return self.served is None or broker is None or self.served(broker)


def _discover() -> dict[int, Handler]:
    handlers: dict[int, Handler] = {}
    for info in pkgutil.iter_modules(__path__):
        if not re.match(r"p\d\d_", info.name):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        api: Api = module.API
        lo, hi = getattr(module, "VERSIONS", (api.min_version, api.max_version))
        if api.key in handlers:
            raise RuntimeError(f"two handlers for API key {api.key}")
        handlers[api.key] = Handler(api, lo, hi, module.handle, getattr(module, "served", None))
    return dict(sorted(handlers.items()))


HANDLERS: dict[int, Handler] = _discover()
