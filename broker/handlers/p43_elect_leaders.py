"""ElectLeaders (43): kafka-leader-election.sh and Admin.electLeaders.

As Kafka's ControllerApis.handleElectLeaders and ReplicationControlManager.electLeaders (decisions
in broker/leader_election.py): ALTER on CLUSTER is required, else every partition asked for (none
when all were) answers CLUSTER_AUTHORIZATION_FAILED, as does the top level from v1. An unknown
election type is INVALID_REQUEST. v0 has no election type: it is a preferred election. In cluster
mode the controller decides: another broker answers NOT_CONTROLLER (clients then ask the
controller named in Metadata). On a single node every partition already has its only replica as
leader, so no election is ever needed.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..leader_election import ELECTION_TYPES, PREFERRED, Outcome
from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType

API = APIS_BY_NAME["ElectLeaders"]


def _requested(request) -> list[tuple[str, int]] | None:
    if request.topic_partitions is None:
        return None
    return list(dict.fromkeys((t.topic, p) for t in request.topic_partitions for p in t.partitions))


def _answer(error: ErrorCode, results: dict[tuple[str, int], Outcome]) -> dict:
    by_topic: dict[str, list[dict]] = {}
    for (topic, partition), outcome in results.items():
        by_topic.setdefault(topic, []).append({
            "partition_id": partition, "error_code": int(outcome.error),
            "error_message": outcome.message if outcome.message is not None
            else (None if outcome.error == ErrorCode.NONE else outcome.error.message)})
    return {"throttle_time_ms": 0, "error_code": int(error),
            "replica_election_results": [{"topic": t, "partition_result": r} for t, r in by_topic.items()]}


def _refused(request, error: ErrorCode, message: str | None = None) -> dict:
    """Kafka's ElectLeadersRequest.getErrorResponse: the error for the top level and each partition."""
    return _answer(error, {tp: Outcome(error, message=message) for tp in _requested(request) or []})


async def handle(broker: BrokerView, ctx, request):
    if not broker.authorizer.authorize(ctx, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        return _refused(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    election_type = request.election_type if ctx.api_version >= 1 else PREFERRED
    if election_type not in ELECTION_TYPES:
        return _refused(request, ErrorCode.INVALID_REQUEST, f"Unknown election type {election_type}")
    results = broker.elect_leaders(election_type, _requested(request))
    if results is None:
        return _refused(request, ErrorCode.NOT_CONTROLLER)
    return _answer(ErrorCode.NONE, results)
