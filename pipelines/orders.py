"""The order-totals view: pure DataFrame transformations, shared by the streaming and replay jobs.

Input is what Spark's Kafka source yields (key, value, topic, partition, offset, timestamp, ...)
for an `orders` topic keyed by customer id, each value a JSON order:

    key = "customer-42"    value = {"order_id": "o-1001", "amount_cents": 1299}

The view is one row per customer: how many orders, their total, when the last one was placed.
It is published as a changelog: key = customer, value = the customer's current totals as JSON,
to a compacted topic, so any consumer rebuilds the whole view by reading it from the start and
keeping the last value per key (`compacted_view`).

Every function here takes and returns DataFrames and touches no source or sink, so the same
code runs on a streaming DataFrame (spark.readStream.format("kafka")), on a bounded batch read
(spark.read.format("kafka")), and in tests on static DataFrames built in memory. The view only
uses aggregations Structured Streaming maintains incrementally (count, sum, max) and integer
money, so replaying a micro-batch after a restart writes byte-identical values.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

ORDER_VALUE = StructType([
    StructField("order_id", StringType()),
    StructField("amount_cents", LongType()),
])

CHANGELOG_VALUE = StructType([
    StructField("customer", StringType()),
    StructField("orders", LongType()),
    StructField("total_cents", LongType()),
    StructField("last_order_ms", LongType()),
])

# The Kafka source's columns that the view reads (Spark's source has headers and timestampType too).
KAFKA_RECORD_COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp"]


def json_order() -> Column:
    """The value as a JSON order (the default format): null when it is not JSON."""
    return F.from_json(F.col("value").cast("string"), ORDER_VALUE)


def _decoded(records: DataFrame, order: Column | None) -> DataFrame:
    return records.select(
        F.col("key").cast("string").alias("customer"),
        (json_order() if order is None else order).alias("order"),
        F.col("timestamp").alias("event_time"),
        "topic", "partition", "offset",
    )


def _is_valid_order() -> Column:
    return (F.col("customer").isNotNull() & (F.length("customer") > 0)
            & F.col("order").isNotNull()
            & F.col("order.order_id").isNotNull()
            & F.col("order.amount_cents").isNotNull())


def parse_orders(records: DataFrame, order: Column | None = None) -> DataFrame:
    """Kafka records -> orders (customer, order_id, amount_cents, event_time, topic, partition,
    offset). Records without a key, with a value that is not an order, or with a non-integer
    amount are left out (`rejected_records` returns them). `order` decodes the value column into
    a struct with order_id and amount_cents: JSON by default (`json_order`), Avro through a Schema
    Registry with pipelines/avro_orders.py's `order_column`."""
    return (_decoded(records, order).where(_is_valid_order())
            .select("customer", "order.order_id", "order.amount_cents", "event_time",
                    "topic", "partition", "offset"))


def rejected_records(records: DataFrame, order: Column | None = None) -> DataFrame:
    """The records `parse_orders` leaves out, with where they are in the log: what a fix of the
    parser would pick up on a replay."""
    return (_decoded(records, order).where(~F.coalesce(_is_valid_order(), F.lit(False)))
            .select("topic", "partition", "offset", "customer",
                    F.col("event_time")))


def order_totals(orders: DataFrame) -> DataFrame:
    """Per customer: orders placed, total amount in cents, time of the last order."""
    return orders.groupBy("customer").agg(
        F.count(F.lit(1)).alias("orders"),
        F.sum("amount_cents").alias("total_cents"),
        F.max("event_time").alias("last_order_at"),
    )


def to_changelog(totals: DataFrame) -> DataFrame:
    """Totals -> the (key, value) string columns Spark's Kafka sink writes. Times are epoch
    milliseconds, so a value does not depend on the session's time zone."""
    return totals.select(
        F.col("customer").alias("key"),
        F.to_json(F.struct(
            "customer",
            F.col("orders").cast("long").alias("orders"),
            F.col("total_cents").cast("long").alias("total_cents"),
            F.unix_millis("last_order_at").alias("last_order_ms"),
        )).alias("value"),
    )


def order_totals_changelog(records: DataFrame, order: Column | None = None) -> DataFrame:
    """Kafka records of the orders topic -> changelog records of the order-totals view."""
    return to_changelog(order_totals(parse_orders(records, order)))


def compacted_view(changelog_records: DataFrame) -> DataFrame:
    """What a consumer rebuilds from a changelog topic read from the start (and what log
    compaction keeps): per key, the value of its latest record; keys whose latest record is a
    tombstone (null value) are gone. "Latest" is the highest offset; records of one key in
    different partitions (the topic grew) are ordered by timestamp first."""
    latest = changelog_records.groupBy(F.col("key").cast("string").alias("key")).agg(
        F.max_by(F.col("value").cast("string"), F.struct("timestamp", "offset")).alias("value"))
    return latest.where(F.col("value").isNotNull())


def parse_changelog(view: DataFrame) -> DataFrame:
    """(key, value) rows of the view -> customer, orders, total_cents, last_order_ms."""
    return (view.select(F.from_json("value", CHANGELOG_VALUE).alias("totals"))
            .select("totals.customer", "totals.orders", "totals.total_cents", "totals.last_order_ms"))
