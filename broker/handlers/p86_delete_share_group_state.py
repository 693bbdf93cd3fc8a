"""DeleteShareGroupState (86): drop share-partitions' state (DeleteShareGroupOffsets, a deleted
share group), tombstoned by the share coordinator leading their __share_group_state partition
(broker/share_coordinator.py)."""

from __future__ import annotations

from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..share_coordinator import answer_state_request

API = APIS_BY_NAME["DeleteShareGroupState"]


def _delete(coordinator, group_id, topic_id, data) -> dict:
    coordinator.delete(group_id, topic_id, data.partition)
    return {}


async def handle(broker: BrokerView, ctx, request):
    return await answer_state_request(broker, ctx, request, _delete, {}, writes=True)
