"""DescribeClientQuotas (48): the quotas of the user, client-id and ip entities a filter matches.

Needs DESCRIBE_CONFIGS on the cluster. A filter Kafka refuses (broker/client_quotas.describe)
answers its error with null entries, as DescribeClientQuotasRequest.getErrorResponse does.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..client_quotas import QuotaRequestError, describe
from ..handler_view import BrokerView
from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType

API = APIS_BY_NAME["DescribeClientQuotas"]


def _error(error: ErrorCode, message: str | None) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(error), "error_message": message, "entries": None}


async def handle(broker: BrokerView, ctx, request):
    if not broker.authorizer.authorize(ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME):
        return _error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED.message)
    try:
        found = describe(broker.metadata.client_quotas, request.components, request.strict)
    except QuotaRequestError as exc:
        return _error(exc.error, exc.message)
    entries = [{"entity": [{"entity_type": kind, "entity_name": name} for kind, name in entity],
                "values": [{"key": key, "value": value} for key, value in sorted(values.items())]}
               for entity, values in found]
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": "", "entries": entries}
