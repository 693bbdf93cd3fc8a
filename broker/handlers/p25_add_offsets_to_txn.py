"""AddOffsetsToTxn (25): add a group's __consumer_offsets partition to the producer's transaction,
so that its TxnOffsetCommit offsets commit or abort with it (clients older than v2 get
INVALID_PRODUCER_EPOCH for PRODUCER_FENCED)."""

from __future__ import annotations

from coordinator.offsets_store import OFFSETS_TOPIC, partition_for
from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType

API = APIS_BY_NAME["AddOffsetsToTxn"]


async def handle(broker: BrokerView, ctx, request):
    groups = broker.groups
    if not broker.authorizer.authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                                       request.transactional_id):
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)}
    if not broker.authorizer.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.GROUP_AUTHORIZATION_FAILED)}
    if groups is None:
        error = ErrorCode.COORDINATOR_NOT_AVAILABLE
    else:
        if groups.offsets_topic is None:
            # Kafka needs no loaded group coordinator here: the partition follows from the group id
            # and offsets.topic.num.partitions. Looking the coordinator up creates __consumer_offsets
            # (as the client's own FindCoordinator before its TxnOffsetCommit would), so EndTxn's
            # markers have a partition to go to.
            broker.coordinator_for(0, request.group_id, ctx.listener)
            partition = partition_for(request.group_id, broker.config["offsets.topic.num.partitions"])
        else:
            partition = groups.partition_for(request.group_id)
        error = broker.transactions.handle_add_partitions(request.transactional_id, request.producer_id,
                                                          request.producer_epoch, [(OFFSETS_TOPIC, partition)])
        error = await broker.transactions.replicated(request.transactional_id, error)
    if error == ErrorCode.PRODUCER_FENCED and ctx.api_version < 2:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    return {"throttle_time_ms": 0, "error_code": int(error)}
