"""DescribeTransactions (65): each transactional id's state, producer, timeout and partitions (KIP-664)."""

from __future__ import annotations

from kafka_wire.messages import APIS_BY_NAME

API = APIS_BY_NAME["DescribeTransactions"]


async def handle(broker, ctx, request):
    return {"throttle_time_ms": 0,
            "transaction_states": [broker.transactions.describe_transaction(t) for t in request.transactional_ids]}
