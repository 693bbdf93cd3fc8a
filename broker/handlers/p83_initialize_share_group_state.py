"""InitializeShareGroupState (83): start a share-partition's state at a start offset, at the share
coordinator leading its __share_group_state partition (broker/share_coordinator.py). In Kafka the
group coordinator sends it when it first assigns a share-partition (or AlterShareGroupOffsets
resets one)."""

from __future__ import annotations

from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..share_coordinator import answer_state_request

API = APIS_BY_NAME["InitializeShareGroupState"]


def _initialize(coordinator, group_id, topic_id, data) -> dict:
    coordinator.initialize(group_id, topic_id, data.partition, data.state_epoch, data.start_offset)
    return {}


async def handle(broker: BrokerView, ctx, request):
    return await answer_state_request(broker, ctx, request, _initialize, {}, writes=True)
