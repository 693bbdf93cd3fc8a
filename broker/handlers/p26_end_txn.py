"""EndTxn (26): commit or abort the producer's transaction (markers are written to every partition
before the answer; clients older than v2 get INVALID_PRODUCER_EPOCH for PRODUCER_FENCED).

v5 is a transaction.version 2 client (Kafka's TransactionVersion.transactionVersionForEndTxn): the
coordinator bumps the epoch on every commit and abort and the answer carries the producer id and
epoch the producer goes on with (-1 on errors)."""

from __future__ import annotations

from coordinator.transaction_coordinator import EndTxnResult
from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import AclOperation, ResourceType

API = APIS_BY_NAME["EndTxn"]


async def handle(broker: BrokerView, ctx, request):
    if not broker.authorizer.authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                                       request.transactional_id):
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)}
    result = broker.transactions.end_transaction(request.transactional_id, request.producer_id,
                                                 request.producer_epoch, request.committed,
                                                 client_transaction_version=2 if ctx.api_version > 4 else 0)
    error = await broker.transactions.replicated(request.transactional_id, result.error)
    if error != result.error:
        result = EndTxnResult(error)  # the producer id and epoch go back only with a success
    if error == ErrorCode.PRODUCER_FENCED and ctx.api_version < 2:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    return {"throttle_time_ms": 0, "error_code": int(error), "producer_id": result.producer_id,
            "producer_epoch": result.producer_epoch}
