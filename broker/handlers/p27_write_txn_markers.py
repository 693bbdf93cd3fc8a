"""WriteTxnMarkers (27): write COMMIT/ABORT markers to partitions this broker leads.

Kafka's transaction coordinators send it to partition leaders. On a single node ours writes
markers to its own partitions directly, so this handler serves a tool that asks; in a cluster the
coordinators of other brokers send it here for the partitions this broker leads (the others are
answered NOT_LEADER_OR_FOLLOWER). v2 says each marker's transaction version (KIP-1228).
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType

API = APIS_BY_NAME["WriteTxnMarkers"]
# How long the in-sync replicas may take (Kafka uses request.timeout.ms, 30 s by default).
MARKER_REPLICATION_TIMEOUT_MS = 30000


async def _write(broker: BrokerView, producer_id: int, producer_epoch: int, coordinator_epoch: int, committed: bool,
                 partitions: list[tuple[str, int]], version: int) -> dict[tuple[str, int], ErrorCode]:
    """The markers appended here, or with several workers (broker/workers/) each by its partition's owner."""
    workers = broker.workers
    if workers is None:
        return broker.write_txn_markers(producer_id, producer_epoch, coordinator_epoch, committed, partitions, version)
    by_owner: dict[int, list[tuple[str, int]]] = {}
    for tp in partitions:
        by_owner.setdefault(workers.owner(*tp), []).append(tp)
    errors: dict[tuple[str, int], ErrorCode] = {}
    for owner, owned in by_owner.items():
        if owner == workers.index:
            errors.update(broker.write_txn_markers(producer_id, producer_epoch, coordinator_epoch, committed, owned,
                                                   version))
        else:
            answer, _, _ = await workers.links[owner].call("markers", (
                producer_id, producer_epoch, coordinator_epoch, committed, owned, version))
            errors.update(zip(owned, (ErrorCode(error) for error in answer)))
    return {tp: errors[tp] for tp in partitions}


async def handle(broker: BrokerView, ctx, request):
    markers = []
    for marker in request.markers:
        partitions = [(t.name, p) for t in marker.topics for p in t.partition_indexes]
        if not broker.authorizer.authorize(ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
            errors = dict.fromkeys(partitions, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        else:
            version = marker.transaction_version if ctx.api_version >= 2 else 0
            errors = await _write(broker, marker.producer_id, marker.producer_epoch, marker.coordinator_epoch,
                                  marker.transaction_result, partitions, version)
            # As Kafka (acks=-1): a marker is answered once the in-sync replicas have it, and with
            # log.flush.on.ack once it is on this broker's disk (Broker.await_durable).
            written = [tp for tp, error in errors.items() if error == ErrorCode.NONE]
            if written:
                errors.update(await broker.await_durable(written, MARKER_REPLICATION_TIMEOUT_MS))
        by_topic: dict[str, list[dict]] = {}
        for (topic, partition), error in errors.items():
            by_topic.setdefault(topic, []).append({"partition_index": partition, "error_code": int(error)})
        markers.append({"producer_id": marker.producer_id,
                        "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]})
    return {"markers": markers}
