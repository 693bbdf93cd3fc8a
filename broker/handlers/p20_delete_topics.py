"""DeleteTopics (20): by name, or by topic id from v6."""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME
from kafka_wire.primitives import ZERO_UUID

API = APIS_BY_NAME["DeleteTopics"]


async def handle(broker, ctx, request):
    if ctx.api_version >= 6:
        wanted = [(t.name, t.topic_id) for t in request.topics]
    else:
        wanted = [(name, ZERO_UUID) for name in request.topic_names]
    responses = []
    for name, topic_id in wanted:
        if name is None:
            meta = broker.metadata.topic_by_id(topic_id)
            missing = ErrorCode.UNKNOWN_TOPIC_ID
        else:
            meta = broker.metadata.topic(name)
            missing = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        entry = {"name": name, "topic_id": topic_id, "error_code": 0, "error_message": None}
        if meta is None:
            entry["error_code"] = int(missing)
            entry["error_message"] = ("This server does not host this topic ID." if name is None
                                      else "This server does not host this topic-partition.")
        elif not broker.config["delete.topic.enable"]:
            entry["error_code"] = int(ErrorCode.TOPIC_DELETION_DISABLED)
            entry["error_message"] = "Topic deletion is disabled."
        else:
            broker.delete_topic(meta.name)
            entry["name"], entry["topic_id"] = meta.name, meta.topic_id
        responses.append(entry)
    return {"throttle_time_ms": 0, "responses": responses}
