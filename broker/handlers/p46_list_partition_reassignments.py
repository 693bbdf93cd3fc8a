"""ListPartitionReassignments (46): kafka-reassign-partitions.sh --list, Admin.listPartitionReassignments.

kafka-wire never reassigns partitions (AlterPartitionReassignments is not served), so no
reassignment is ever in progress: the answer lists none, whichever partitions are asked about;
Kafka's ReplicationControlManager.listPartitionReassignments likewise passes over topics and
partitions that do not exist or are not moving. DESCRIBE on CLUSTER is required, else the top
level answers CLUSTER_AUTHORIZATION_FAILED (ControllerApis.handleListPartitionReassignments).
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType

API = APIS_BY_NAME["ListPartitionReassignments"]


async def handle(broker, ctx, request):
    if not broker.authorizer.authorize(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return {"throttle_time_ms": 0, "error_code": int(error), "error_message": error.message, "topics": []}
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "topics": []}
