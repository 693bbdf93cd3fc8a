"""OffsetDelete (47): delete a group's committed offsets of topics it does not consume.

Partitions of topics that do not exist answer UNKNOWN_TOPIC_OR_PARTITION; a partition of a topic
the group's members subscribe to answers GROUP_SUBSCRIBED_TO_TOPIC; a group that does not exist,
GROUP_ID_NOT_FOUND.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType
from .p08_offset_commit import partition_exists

API = APIS_BY_NAME["OffsetDelete"]


async def handle(broker: BrokerView, ctx, request):
    groups = getattr(broker, "groups", None)
    errors: dict[tuple[str, int], ErrorCode] = {}
    known = []
    if not broker.authorizer.authorize(ctx, AclOperation.DELETE, ResourceType.GROUP, request.group_id):
        return {"error_code": int(ErrorCode.GROUP_AUTHORIZATION_FAILED), "throttle_time_ms": 0, "topics": []}
    readable = broker.authorizer.filter_authorized(ctx, AclOperation.READ, ResourceType.TOPIC,
                                                   (t.name for t in request.topics))
    for topic in request.topics:
        for p in topic.partitions:
            tp = (topic.name, p.partition_index)
            if topic.name not in readable:
                errors[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif partition_exists(broker, *tp):
                known.append(tp)
            else:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if groups is None:
        error, results = ErrorCode.COORDINATOR_NOT_AVAILABLE, {}
    else:
        error, results = groups.delete_offsets(request.group_id, known)
    if error != ErrorCode.NONE:
        return {"error_code": int(error), "throttle_time_ms": 0, "topics": []}
    errors.update(results)
    return {
        "error_code": 0,
        "throttle_time_ms": 0,
        "topics": [
            {"name": topic.name,
             "partitions": [{"partition_index": p.partition_index,
                             "error_code": int(errors[(topic.name, p.partition_index)])}
                            for p in topic.partitions]}
            for topic in request.topics
        ],
    }
