"""AddPartitionsToTxn (24): a transactional producer adds partitions to its transaction.

v0-3 carry one producer's transaction; v4 (KIP-890, sent by partition leaders) carries several,
each either added (as a transaction.version 2 transaction: Kafka's leaders send that for Produce
v12 and TxnOffsetCommit v5) or, with `verify_only`, only checked (a partition not in the
transaction answers TRANSACTION_ABORTABLE, at v4 too, as Kafka 4.3 does). As in Kafka's KafkaApis: partitions of
unknown topics fail with UNKNOWN_TOPIC_OR_PARTITION and the others of that transaction with
OPERATION_NOT_ATTEMPTED; clients older than v2 get INVALID_PRODUCER_EPOCH for PRODUCER_FENCED.
Clients (v0-3) need WRITE on the transactional id and on each topic; a v4 batch comes from another
broker and needs CLUSTER_ACTION on the cluster (else CLUSTER_AUTHORIZATION_FAILED at the top level).
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

from ..handler_view import BrokerView
from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType

API = APIS_BY_NAME["AddPartitionsToTxn"]


def topic_results(errors: dict[tuple[str, int], ErrorCode]) -> list[dict]:
    by_topic: dict[str, list[dict]] = {}
    for (topic, partition), error in errors.items():
        by_topic.setdefault(topic, []).append({"partition_index": partition, "partition_error_code": int(error)})
    return [{"name": topic, "results_by_partition": results} for topic, results in by_topic.items()]


def add_partitions(broker: BrokerView, transactional_id: str, producer_id: int, producer_epoch: int,
                   partitions: list[tuple[str, int]], version: int) -> dict[tuple[str, int], ErrorCode]:
    # Known to the cluster (Kafka's metadataCache.contains): in a cluster the coordinator need not
    # host the partition.
    unknown = {(t, p) for t, p in partitions
               if (meta := broker.metadata.topic(t)) is None or not 0 <= p < meta.partitions}
    if unknown:
        return {tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else ErrorCode.OPERATION_NOT_ATTEMPTED
                for tp in partitions}
    # Kafka's TransactionVersion.transactionVersionForAddPartitionsToTxn: v4+ comes from a leader
    # adding for a transaction.version 2 client.
    error = broker.transactions.handle_add_partitions(transactional_id, producer_id, producer_epoch, partitions,
                                                      client_transaction_version=2 if version > 3 else 0)
    if error == ErrorCode.PRODUCER_FENCED and version < 2:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    return dict.fromkeys(partitions, error)


async def replicated(broker: BrokerView, transactional_id: str, errors: dict[tuple[str, int], ErrorCode]
                     ) -> dict[tuple[str, int], ErrorCode]:
    """Added partitions are answered once the transaction log write is replicated (acks=-1)."""
    if errors and all(error == ErrorCode.NONE for error in errors.values()):
        error = await broker.transactions.replicated(transactional_id, ErrorCode.NONE)
        return dict.fromkeys(errors, error)
    return errors


async def handle(broker: BrokerView, ctx, request):
    version = ctx.api_version
    if version < 4:
        partitions = [(t.name, p) for t in request.v3_and_below_topics for p in t.partitions]
        if not broker.authorizer.authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                                           request.v3_and_below_transactional_id):
            errors = dict.fromkeys(partitions, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
            return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": topic_results(errors)}
        writable = broker.authorizer.filter_authorized(ctx, AclOperation.WRITE, ResourceType.TOPIC,
                                                       {t for t, _ in partitions})
        if len(writable) < len({t for t, _ in partitions}):
            errors = {tp: ErrorCode.OPERATION_NOT_ATTEMPTED if tp[0] in writable
                      else ErrorCode.TOPIC_AUTHORIZATION_FAILED for tp in partitions}
            return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": topic_results(errors)}
        errors = add_partitions(broker, request.v3_and_below_transactional_id, request.v3_and_below_producer_id,
                                request.v3_and_below_producer_epoch, partitions, version)
        errors = await replicated(broker, request.v3_and_below_transactional_id, errors)
        return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": topic_results(errors)}
    if not broker.authorizer.authorize(ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
                "results_by_transaction": []}
    results = []
    for txn in request.transactions:
        partitions = [(t.name, p) for t in txn.topics for p in t.partitions]
        if txn.verify_only:
            errors = broker.transactions.handle_verify_partitions(txn.transactional_id, txn.producer_id,
                                                                  txn.producer_epoch, partitions,
                                                                  abortable=True)
        else:
            errors = add_partitions(broker, txn.transactional_id, txn.producer_id, txn.producer_epoch,
                                    partitions, version)
            errors = await replicated(broker, txn.transactional_id, errors)
        results.append({"transactional_id": txn.transactional_id, "topic_results": topic_results(errors)})
    return {"throttle_time_ms": 0, "error_code": 0, "results_by_transaction": results}
