"""AlterClientQuotas (49): set or remove quotas of user, client-id and ip entities; they take effect
at once (broker/client_quotas.py) and are kept in the metadata: the embedded file, or in cluster
mode ZooKeeper (/config/users, /config/clients, /config/ips), where this broker writes them and
every broker applies them when notified, as in Kafka's ZooKeeper mode.

Needs ALTER_CONFIGS on the cluster (else every entity answers CLUSTER_AUTHORIZATION_FAILED).
validate_only checks without storing. Validation and messages: Kafka's ClientQuotaControlManager.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..client_quotas import entity_key, plan_alterations
from ..handler_view import BrokerView
from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType

API = APIS_BY_NAME["AlterClientQuotas"]


def _entity(entity) -> list[dict]:
    return [{"entity_type": kind, "entity_name": name} for kind, name in entity]


async def handle(broker: BrokerView, ctx, request):
    metadata = broker.metadata
    refused = None
    if not broker.authorizer.authorize(ctx, AclOperation.ALTER_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME):
        refused = (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED.message)
    if refused is not None:
        entities = dict.fromkeys(entity_key({e.entity_type: e.entity_name for e in entry.entity}.items())
                                 for entry in request.entries)
        return {"throttle_time_ms": 0, "entries": [
            {"error_code": int(refused[0]), "error_message": refused[1], "entity": _entity(entity)}
            for entity in entities]}
    # Planned against what the store holds now (in a cluster, ZooKeeper: another broker may have
    # just changed them).
    current = metadata.read_client_quotas({entity_key({e.entity_type: e.entity_name for e in entry.entity}.items())
                                           for entry in request.entries})
    results, changes = plan_alterations(current, request.entries)
    if changes and not request.validate_only:
        metadata.set_client_quotas(changes)
    return {"throttle_time_ms": 0, "entries": [
        {"error_code": int(error), "error_message": message, "entity": _entity(entity)}
        for entity, error, message in results]}
