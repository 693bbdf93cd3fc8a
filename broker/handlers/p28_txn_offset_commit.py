"""TxnOffsetCommit (28): offsets committed inside a transaction, visible once it commits.

As Kafka: partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION; the group's
__consumer_offsets partition must be in the transaction (AddOffsetsToTxn) before the first write
there (KIP-890 verification; not added answers INVALID_TXN_STATE, TRANSACTION_ABORTABLE from v4);
v5 comes from a transaction.version 2 producer, which sends no AddOffsetsToTxn: the first write
adds the partition to the transaction. Then the group coordinator stores the offsets as pending.
"""

from __future__ import annotations

from coordinator.offsets_store import OFFSETS_TOPIC
from coordinator.transaction_coordinator import txn_offset_commit_operation
from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from .p08_offset_commit import await_commit_durable
from ..security.authorizer import AclOperation, ResourceType

API = APIS_BY_NAME["TxnOffsetCommit"]


async def handle(broker: BrokerView, ctx, request):
    errors: dict[tuple[str, int], ErrorCode] = {}
    offsets = []
    authorizer = broker.authorizer
    if not authorizer.authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        denied = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not authorizer.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        denied = ErrorCode.GROUP_AUTHORIZATION_FAILED
    else:
        denied = None
    readable = authorizer.filter_authorized(ctx, AclOperation.READ, ResourceType.TOPIC,
                                            (t.name for t in request.topics))
    for topic in request.topics:
        known = broker.metadata.topic(topic.name)
        for p in topic.partitions:
            if denied is not None or topic.name not in readable:
                errors[(topic.name, p.partition_index)] = denied or ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif known is None or not 0 <= p.partition_index < known.partitions:
                errors[(topic.name, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                offsets.append((topic.name, p.partition_index, p.committed_offset, p.committed_leader_epoch,
                                p.committed_metadata))
    groups = broker.groups
    if offsets:
        error = ErrorCode.NONE
        if groups is None or groups.offsets_topic is None:
            error = ErrorCode.COORDINATOR_NOT_AVAILABLE
        else:
            partition = groups.partition_for(request.group_id)
            # Kafka passes the coordinator's answer on (INVALID_TXN_STATE when AddOffsetsToTxn
            # was not called, CONCURRENT_TRANSACTIONS, ...), except that a fenced producer hears
            # INVALID_PRODUCER_EPOCH (AddPartitionsToTxnManager's mapping; Kafka 4.3 answers it at
            # every version).
            error = await broker.transactions.transactional_write_error(
                request.transactional_id, request.producer_id, request.producer_epoch, OFFSETS_TOPIC, partition,
                broker.partition_log(OFFSETS_TOPIC, partition), txn_offset_commit_operation(ctx.api_version))
            if error == ErrorCode.PRODUCER_FENCED:
                error = ErrorCode.INVALID_PRODUCER_EPOCH
        if error != ErrorCode.NONE:
            errors.update(((t, p), error) for t, p, *_ in offsets)
        else:
            errors.update(groups.commit_transactional_offsets(
                group_id=request.group_id, producer_id=request.producer_id, producer_epoch=request.producer_epoch,
                generation_id=request.generation_id, member_id=request.member_id or "",
                group_instance_id=request.group_instance_id, offsets=offsets))
            if broker.waits_for_replicas or broker.flush_on_ack:
                await await_commit_durable(broker, request.group_id, errors)
    by_topic: dict[str, list[dict]] = {}
    for (topic, partition), error in errors.items():
        by_topic.setdefault(topic, []).append({"partition_index": partition, "error_code": int(error)})
    return {"throttle_time_ms": 0, "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}
