"""ShareGroupDescribe (77): epochs, members and assignments of KIP-932 share groups.

An unknown group, or a group of another type, answers GROUP_ID_NOT_FOUND as Kafka 4.3 does; with the
finalized share.version below 1 every group answers UNSUPPORTED_VERSION.
"""

from __future__ import annotations

from kafka_wire.messages import APIS_BY_NAME

from ..features import SHARE_VERSION
from ..handler_view import BrokerView
from ..share_groups import service_of
from .p69_consumer_group_describe import describe_groups

API = APIS_BY_NAME["ShareGroupDescribe"]
async def handle(broker: BrokerView, ctx, request):
    def coordinator():
        service = service_of(broker)

        def topic_name(topic_id):
            meta = broker.metadata.topic_by_id(topic_id)
            return None if meta is None else meta.name

        def describe(group_id):
            # In a cluster, only the group's coordinator describes it (the others: NOT_COORDINATOR).
            error = service.group_error(group_id)
            if error is not None:
                return {"error_code": int(error), "error_message": None, "group_id": group_id}
            return service.coordinator.describe(group_id, topic_name)

        return describe, service.ready()

    return describe_groups(broker, ctx, request, SHARE_VERSION, coordinator)
