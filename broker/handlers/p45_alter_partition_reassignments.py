"""AlterPartitionReassignments (45): kafka-reassign-partitions.sh --execute/--cancel, Admin.alterPartitionReassignments.

As Kafka's ControllerApis.handleAlterPartitionReassignments and ReplicationControlManager
.alterPartitionReassignments (decisions in broker/cluster/partition_reassignment.py): ALTER on
CLUSTER is required, else the top level and every partition answer CLUSTER_AUTHORIZATION_FAILED
(AlterPartitionReassignmentsRequest.getErrorResponse). Each partition gets its own error:
UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT (empty, duplicate or unregistered
brokers), NO_REASSIGNMENT_IN_PROGRESS (cancelling nothing), INVALID_REPLICATION_FACTOR (v1 with
AllowReplicationFactorChange=false and another replica count). In cluster mode the controller
moves the partitions; another broker answers NOT_CONTROLLER at the top level, as ZooKeeper-mode
Kafka does (clients send this request to the controller). On a single node the only valid target
is the node itself, where every partition already is.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType

API = APIS_BY_NAME["AlterPartitionReassignments"]


def _answer(request, allow: bool, error: ErrorCode, results) -> dict:
    """`results`: (topic, partition) -> (error, message), answered in the request's order."""
    return {"throttle_time_ms": 0, "allow_replication_factor_change": allow, "error_code": int(error),
            "error_message": None if error == ErrorCode.NONE else error.message,
            "responses": [{"name": t.name, "partitions": [
                {"partition_index": p.partition_index, "error_code": int(results[(t.name, p.partition_index)][0]),
                 "error_message": results[(t.name, p.partition_index)][1]} for p in t.partitions]}
                for t in request.topics]}


async def handle(broker: BrokerView, ctx, request):
    allow = request.allow_replication_factor_change if ctx.api_version >= 1 else True
    requested = [(t.name, p.partition_index, None if p.replicas is None else list(p.replicas))
                 for t in request.topics for p in t.partitions]
    if not broker.authorizer.authorize(ctx, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return _answer(request, allow, error, {(t, p): (error, error.message) for t, p, _ in requested})
    results = broker.alter_partition_reassignments(requested, allow)
    if results is None:
        return {"throttle_time_ms": 0, "allow_replication_factor_change": allow,
                "error_code": int(ErrorCode.NOT_CONTROLLER), "error_message": ErrorCode.NOT_CONTROLLER.message,
                "responses": []}
    return _answer(request, allow, ErrorCode.NONE, results)
