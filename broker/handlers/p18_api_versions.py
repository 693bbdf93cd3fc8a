"""ApiVersions (18): the versions we serve, which clients intersect with their own."""

from __future__ import annotations

import re

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

API = APIS_BY_NAME["ApiVersions"]

# KIP-511: client software name and version must match this or the request is INVALID_REQUEST.
_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


def api_versions_response(error: ErrorCode = ErrorCode.NONE) -> dict:
    from . import HANDLERS

    return {
        "error_code": int(error),
        "api_keys": [
            {"api_key": key, "min_version": h.min_version, "max_version": h.max_version}
            for key, h in HANDLERS.items()
        ],
        "throttle_time_ms": 0,
    }


async def handle(broker, ctx, request):
    if ctx.api_version >= 3:
        name, version = request.client_software_name, request.client_software_version
        if not (_SOFTWARE.match(name or "") and _SOFTWARE.match(version or "")):
            return api_versions_response(ErrorCode.INVALID_REQUEST)
    return api_versions_response()
