"""ListTransactions (66): the transactional ids this coordinator knows, filtered by state and producer id
(unknown state names are echoed back in unknown_state_filters, KIP-664)."""

from __future__ import annotations

from kafka_wire.messages import APIS_BY_NAME

API = APIS_BY_NAME["ListTransactions"]


async def handle(broker, ctx, request):
    return broker.transactions.list_transactions(request.state_filters or [], request.producer_id_filters or [])
