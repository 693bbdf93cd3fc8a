"""ListTransactions (66): the transactional ids this coordinator knows, filtered by state and producer id
(unknown state names are echoed back in unknown_state_filters, KIP-664), from v1 by how long they have
been running (KIP-994), from v2 by a regular expression over the ids (KIP-1152).

As in Kafka's KafkaApis, only the ids the principal may DESCRIBE are listed; the others are
left out silently (no error).
"""

from __future__ import annotations

from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType

API = APIS_BY_NAME["ListTransactions"]


async def handle(broker: BrokerView, ctx, request):
    response = broker.transactions.list_transactions(request.state_filters or [], request.producer_id_filters or [],
                                                     request.duration_filter, request.transactional_id_pattern)
    listed = response["transaction_states"]
    if listed:
        visible = broker.authorizer.filter_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                                                      {s["transactional_id"] for s in listed})
        response["transaction_states"] = [s for s in listed if s["transactional_id"] in visible]
    return response
