"""ApiVersions (18): the versions we serve, which clients intersect with their own, and from v3 the
supported and finalized features (KIP-584, broker/features.py): Java clients 4.x run transactions
with KIP-890 part 2 when the finalized transaction.version is 2, and Admin.describeFeatures
(kafka-features.sh describe) reads them from here."""

from __future__ import annotations

import re

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..features import api_versions_features
from ..handler_view import BrokerView

API = APIS_BY_NAME["ApiVersions"]

# KIP-511: client software name and version must match this or the request is INVALID_REQUEST.
_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


def api_versions_response(error: ErrorCode = ErrorCode.NONE, serving: BrokerView | None = None) -> dict:
    """Our version table; with an error, what Kafka's ApiVersionsRequest.getErrorResponse puts
    in its place: nothing, except under UNSUPPORTED_VERSION, where it lists ApiVersions' own
    range so the client can retry at a version both sides know (kafka-clients 3.9.0 answers
    errorCode=35 with apiKeys=[{18, 0, max}]). Given the broker serving, only the APIs it serves."""
    from . import HANDLERS

    keys = [{"api_key": key, "min_version": h.min_version, "max_version": h.max_version}
            for key, h in HANDLERS.items() if h.served_by(serving)]
    if error == ErrorCode.UNSUPPORTED_VERSION:
        keys = [k for k in keys if k["api_key"] == API.key]
    elif error != ErrorCode.NONE:
        keys = []
    return {"error_code": int(error), "api_keys": keys, "throttle_time_ms": 0}


async def handle(broker: BrokerView, ctx, request):
    if ctx.api_version >= 3:
        name, version = request.client_software_name, request.client_software_version
        if not (_SOFTWARE.fullmatch(name or "") and _SOFTWARE.fullmatch(version or "")):
            return api_versions_response(ErrorCode.INVALID_REQUEST)
    response = api_versions_response(serving=broker)
    finalized, epoch = broker.finalized_features()
    response.update(api_versions_features(broker.supported_features(), finalized, epoch, ctx.api_version))
    return response
