"""ReadShareGroupState (84): a share-partition's persisted state (state epoch, start offset, state
batches), which its leader loads when it starts serving it, from the share coordinator leading its
__share_group_state partition (broker/share_coordinator.py). A newer leader epoch is recorded (the
old leader is fenced from then on), an older one answers FENCED_LEADER_EPOCH. No state: start
offset -1, no batches."""

from __future__ import annotations

from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..share_coordinator import answer_state_request

API = APIS_BY_NAME["ReadShareGroupState"]

NO_STATE = {"state_epoch": 0, "start_offset": -1, "state_batches": []}


def _read(coordinator, group_id, topic_id, data) -> dict:
    state = coordinator.read(group_id, topic_id, data.partition, data.leader_epoch)
    if not state.found:
        return dict(NO_STATE)
    return {"state_epoch": state.state_epoch, "start_offset": state.start_offset, "state_batches": [
        {"first_offset": b.first_offset, "last_offset": b.last_offset, "delivery_state": b.delivery_state,
         "delivery_count": b.delivery_count} for b in state.batches]}


async def handle(broker: BrokerView, ctx, request):
    return await answer_state_request(broker, ctx, request, _read, NO_STATE, writes=False)
