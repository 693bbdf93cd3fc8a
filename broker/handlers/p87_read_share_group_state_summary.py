"""ReadShareGroupStateSummary (87): a share-partition's state epoch, leader epoch, start offset and
(v1) delivery complete count, what DescribeShareGroupOffsets shows, from the share coordinator
leading its __share_group_state partition (broker/share_coordinator.py)."""

from __future__ import annotations

from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..share_coordinator import answer_state_request

API = APIS_BY_NAME["ReadShareGroupStateSummary"]

NO_STATE = {"state_epoch": 0, "leader_epoch": -1, "start_offset": -1, "delivery_complete_count": -1}


def _summary(coordinator, group_id, topic_id, data) -> dict:
    state = coordinator.read(group_id, topic_id, data.partition)
    if not state.found:
        return dict(NO_STATE)
    return {"state_epoch": state.state_epoch, "leader_epoch": state.leader_epoch, "start_offset": state.start_offset,
            "delivery_complete_count": state.delivery_complete_count()}


async def handle(broker: BrokerView, ctx, request):
    return await answer_state_request(broker, ctx, request, _summary, NO_STATE, writes=False)
