"""ListPartitionReassignments (46): kafka-reassign-partitions.sh --list/--verify, Admin.listPartitionReassignments.

As Kafka's ReplicationControlManager.listPartitionReassignments: every partition being reassigned
(a null topic list) or those asked for, with its replicas (the target followed by the replicas
leaving), adding and removing replicas; topics and partitions that do not exist or are not
moving are passed over. DESCRIBE on CLUSTER is required, else the top level answers
CLUSTER_AUTHORIZATION_FAILED (ControllerApis.handleListPartitionReassignments). In cluster mode
every broker answers from the topic znodes it watches (a Kafka 4 broker forwards this request to
the controller); on a single node no reassignment is ever in progress.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType

API = APIS_BY_NAME["ListPartitionReassignments"]


async def handle(broker: BrokerView, ctx, request):
    if not broker.authorizer.authorize(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return {"throttle_time_ms": 0, "error_code": int(error), "error_message": error.message, "topics": []}
    requested = None if request.topics is None else list(dict.fromkeys(
        (t.name, p) for t in request.topics for p in t.partition_indexes))
    by_topic: dict[str, list[dict]] = {}
    for (topic, partition), ongoing in broker.list_partition_reassignments(requested).items():
        by_topic.setdefault(topic, []).append({
            "partition_index": partition, "replicas": list(ongoing.replicas),
            "adding_replicas": list(ongoing.adding), "removing_replicas": list(ongoing.removing)})
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
            "topics": [{"name": t, "partitions": p} for t, p in by_topic.items()]}
