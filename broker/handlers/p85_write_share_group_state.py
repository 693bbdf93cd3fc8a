"""WriteShareGroupState (85): a share-partition leader's state change (acknowledgements, releases,
lock timeouts, a moved start offset), laid over the stored state by the share coordinator leading
its __share_group_state partition (broker/share_coordinator.py) and answered once the in-sync
replicas have it. Older leader or state epochs are fenced (FENCED_LEADER_EPOCH,
FENCED_STATE_EPOCH). v1 carries the delivery complete count."""

from __future__ import annotations

from coordinator.share_partition import StateBatch, StateUpdate
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..share_coordinator import answer_state_request

API = APIS_BY_NAME["WriteShareGroupState"]


def _write(coordinator, group_id, topic_id, data) -> dict:
    update = StateUpdate(data.state_epoch, data.leader_epoch, data.start_offset, data.delivery_complete_count,
                         tuple(StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                               for b in data.state_batches))
    coordinator.write(group_id, topic_id, data.partition, update)
    return {}


async def handle(broker: BrokerView, ctx, request):
    return await answer_state_request(broker, ctx, request, _write, {}, writes=True)
