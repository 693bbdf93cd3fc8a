"""DescribeTransactions (65): each transactional id's state, producer, timeout and partitions (KIP-664).

As in Kafka's KafkaApis: an id the principal may not DESCRIBE answers
TRANSACTIONAL_ID_AUTHORIZATION_FAILED (the other fields left at their defaults), and a described
transaction lists only the topics the principal may DESCRIBE.
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType

API = APIS_BY_NAME["DescribeTransactions"]


def _error_entry(transactional_id: str, error: int) -> dict:
    """An entry with an error: Kafka leaves the other fields at the message's defaults (0, not -1)."""
    return {"error_code": error, "transactional_id": transactional_id,
            "transaction_state": "", "transaction_timeout_ms": 0, "transaction_start_time_ms": 0,
            "producer_id": 0, "producer_epoch": 0, "topics": []}


async def handle(broker: BrokerView, ctx, request):
    authorizer = broker.authorizer
    states = []
    for transactional_id in request.transactional_ids:
        if not authorizer.authorize(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            states.append(_error_entry(transactional_id, int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)))
            continue
        state = broker.transactions.describe_transaction(transactional_id)
        if state["error_code"]:
            states.append(_error_entry(transactional_id, state["error_code"]))
            continue
        if state["topics"]:
            visible = authorizer.filter_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                                   {t["topic"] for t in state["topics"]})
            state["topics"] = [t for t in state["topics"] if t["topic"] in visible]
        states.append(state)
    return {"throttle_time_ms": 0, "transaction_states": states}
