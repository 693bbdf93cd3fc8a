"""The pipelines' transformations on local PySpark (no Kafka connector needed).

- static DataFrames shaped like Spark's Kafka source: parsing, totals, changelog records,
  rebuilding the compacted view;
- the same transformation as a real Structured Streaming query (file source instead of Kafka),
  stopped and restarted on its checkpoint: proves the plan is a valid update-mode streaming
  aggregation and that its state carries over a restart;
- a connector-free replay of the streaming job's micro-batch protocol against a real broker,
  killed once between writing a batch and committing it (see that test's docstring for exactly
  what it does and does not prove).

One SparkSession (local[2], UI off, 2 shuffle partitions) serves the whole module.
"""

from __future__ import annotations

import json
import os
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark")
confluent_kafka = pytest.importorskip("confluent_kafka")

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql.types import (  # noqa: E402
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from pipelines import orders  # noqa: E402

pytestmark = pytest.mark.timeout(300)

# The columns and types of Spark's Kafka source (spark.read/readStream.format("kafka")).
KAFKA_SOURCE_SCHEMA = StructType([
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
    StructField("timestampType", IntegerType()),
])


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    # The JVM starts in the current directory and Spark 4 keeps session artifacts under
    # ./artifacts: start it in a scratch directory instead of the work tree.
    work_tree = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("spark-cwd"))
    try:
        session = _start_spark()
    finally:
        os.chdir(work_tree)
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _start_spark():
    return (SparkSession.builder.master("local[2]").appName("kafka-wire pipeline tests")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.default.parallelism", "2")
            # Tiny inputs: compiling generated code and re-planning shuffles cost more than they save.
            .config("spark.sql.codegen.wholeStage", "false")
            .config("spark.sql.adaptive.enabled", "false")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.driver.host", "127.0.0.1")        # loopback only
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
            .getOrCreate())


def at(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


def kafka_row(key, value, offset, ms, partition=0, topic="orders"):
    encode = (lambda v: v.encode() if isinstance(v, str) else v)
    return (encode(key), encode(value), topic, partition, offset, at(ms), 0)


def order(order_id: str, cents) -> str:
    return json.dumps({"order_id": order_id, "amount_cents": cents})


def rows_by(df, column: str) -> dict:
    return {row[column]: row.asDict() for row in df.collect()}


# --- static DataFrames ----------------------------------------------------------------------------

RECORDS = [
    kafka_row("alice", order("o1", 1250), 0, 1_000),
    kafka_row("bob", order("o2", 500), 1, 2_000),
    kafka_row("alice", order("o3", -250), 2, 3_000),      # a refund is an order with a negative amount
    kafka_row(None, order("o4", 100), 3, 4_000),          # no key: no customer
    kafka_row("", order("o5", 100), 4, 4_000),            # empty key
    kafka_row("carol", "not json", 5, 5_000),
    kafka_row("carol", order("o6", 12.5), 6, 6_000),      # money is integer cents
    kafka_row("carol", json.dumps({"amount_cents": 5}), 7, 7_000),   # no order id
    kafka_row("carol", None, 8, 8_000),                   # a tombstone on the orders topic
    kafka_row("bob", order("o9", 700), 0, 9_000, partition=1),
]


def test_parse_orders_keeps_valid_orders_and_rejected_records_returns_the_rest(spark):
    records = spark.createDataFrame(RECORDS, KAFKA_SOURCE_SCHEMA)
    parsed = orders.parse_orders(records).orderBy("partition", "offset").collect()
    assert [(r.customer, r.order_id, r.amount_cents, r.partition, r.offset) for r in parsed] == [
        ("alice", "o1", 1250, 0, 0), ("bob", "o2", 500, 0, 1), ("alice", "o3", -250, 0, 2), ("bob", "o9", 700, 1, 0)]
    assert parsed[0].event_time == at(1_000).replace(tzinfo=None)
    rejected = orders.rejected_records(records).orderBy("partition", "offset").collect()
    assert [(r.partition, r.offset) for r in rejected] == [(0, 3), (0, 4), (0, 5), (0, 6), (0, 7), (0, 8)]


def test_order_totals_changelog_is_one_json_value_per_customer(spark):
    changelog = orders.order_totals_changelog(spark.createDataFrame(RECORDS, KAFKA_SOURCE_SCHEMA))
    assert {r.key: json.loads(r.value) for r in changelog.collect()} == {
        "alice": {"customer": "alice", "orders": 2, "total_cents": 1000, "last_order_ms": 3_000},
        "bob": {"customer": "bob", "orders": 2, "total_cents": 1200, "last_order_ms": 9_000},
    }
    assert dict(changelog.dtypes) == {"key": "string", "value": "string"}  # what the Kafka sink takes


def test_changelog_values_do_not_depend_on_the_session_time_zone(spark):
    records = spark.createDataFrame(RECORDS, KAFKA_SOURCE_SCHEMA)
    in_utc = sorted(tuple(r) for r in orders.order_totals_changelog(records).collect())
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        elsewhere = sorted(tuple(r) for r in orders.order_totals_changelog(records).collect())
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    assert elsewhere == in_utc


def test_compacted_view_keeps_the_latest_value_per_key_and_drops_tombstones(spark):
    changelog = spark.createDataFrame([
        kafka_row("alice", '{"v":1}', 0, 1_000, topic="view"),
        kafka_row("bob", '{"v":1}', 1, 1_000, topic="view"),
        kafka_row("alice", '{"v":2}', 2, 2_000, topic="view"),
        kafka_row("carol", '{"v":1}', 3, 2_000, topic="view"),
        kafka_row("carol", None, 4, 3_000, topic="view"),                 # tombstone: carol is gone
        kafka_row("bob", '{"v":2}', 0, 5_000, partition=1, topic="view"),  # bob moved partition later
        kafka_row("alice", '{"v":3}', 7, 2_000, topic="view"),            # same time, higher offset
    ], KAFKA_SOURCE_SCHEMA)
    view = {r.key: r.value for r in orders.compacted_view(changelog).collect()}
    assert view == {"alice": '{"v":3}', "bob": '{"v":2}'}


def test_parse_changelog_reads_back_what_to_changelog_wrote(spark):
    changelog = orders.order_totals_changelog(spark.createDataFrame(RECORDS, KAFKA_SOURCE_SCHEMA))
    parsed = rows_by(orders.parse_changelog(changelog), "customer")
    assert parsed["alice"] == {"customer": "alice", "orders": 2, "total_cents": 1000, "last_order_ms": 3_000}


# --- the same plan under Structured Streaming --------------------------------------------------------

def write_kafka_shaped_json(folder: Path, name: str, rows, mtime: float) -> None:
    """A JSON-lines file of Kafka-source-shaped rows (key/value as text), for a file stream; the
    file source takes files in modification-time order, hence the explicit `mtime`."""
    def text(b):
        return None if b is None else b.decode()

    tmp = folder / f".{name}.tmp"
    with open(tmp, "w") as out:
        for key, value, topic, partition, offset, ts, _ in rows:
            out.write(json.dumps({"key": text(key), "value": text(value), "topic": topic, "partition": partition,
                                  "offset": offset, "timestamp": ts.isoformat(timespec="milliseconds")}) + "\n")
    os.utime(tmp, (mtime, mtime))
    os.replace(tmp, folder / f"{name}.json")  # the file source must not see half a file


def run_file_stream(spark, source: Path, checkpoint: Path) -> list[dict]:
    """Runs orders.order_totals_changelog as an update-mode streaming query over the files in
    `source` until they are processed (availableNow), and returns every row it emitted."""
    text_schema = StructType([StructField("key", StringType()), StructField("value", StringType()),
                              StructField("topic", StringType()), StructField("partition", IntegerType()),
                              StructField("offset", LongType()), StructField("timestamp", TimestampType())])
    records = (spark.readStream.schema(text_schema).option("maxFilesPerTrigger", 1).json(str(source))
               .select(F.col("key").cast("binary").alias("key"), F.col("value").cast("binary").alias("value"),
                       "topic", "partition", "offset", "timestamp"))
    emitted: list[dict] = []

    def collect(batch, batch_id):
        emitted.extend({"batch": batch_id, **json.loads(r.value)} for r in batch.collect())

    query = (orders.order_totals_changelog(records).writeStream.outputMode("update")
             .option("checkpointLocation", str(checkpoint)).foreachBatch(collect)
             .trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert not query.isActive, "the streaming query did not finish"
    assert query.exception() is None, query.exception()
    return emitted


def test_the_view_runs_as_a_streaming_query_and_resumes_from_its_checkpoint(spark, tmp_path):
    """Structured Streaming accepts the plan (update mode, streaming aggregation) and a restart on
    the checkpoint continues with the saved totals and only the new input. The source is a file
    stream instead of Kafka (the connector is not installed here); the plan above it is the job's."""
    source, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    source.mkdir()
    now = time.time()
    write_kafka_shaped_json(source, "0", RECORDS[:3], now - 100)
    write_kafka_shaped_json(source, "1", RECORDS[3:], now - 50)
    first = run_file_stream(spark, source, checkpoint)
    assert sorted((e["batch"], e["customer"], e["orders"], e["total_cents"]) for e in first) == [
        (0, "alice", 2, 1000), (0, "bob", 1, 500), (1, "bob", 2, 1200)]

    write_kafka_shaped_json(source, "2", [kafka_row("alice", order("o10", 1), 1, 10_000, partition=1)], now)
    second = run_file_stream(spark, source, checkpoint)  # a new query on the same checkpoint
    assert [(e["batch"], e["customer"], e["orders"], e["total_cents"], e["last_order_ms"]) for e in second] == [
        (2, "alice", 3, 1001, 10_000)]


# --- the streaming job's micro-batch protocol against a broker, without the connector ----------------

N_CUSTOMERS = 500
SLOW = os.environ.get("KW_SLOW") == "1"
N_ORDERS = 100_000 if SLOW else 12_000
MAX_RECORDS_PER_BATCH = N_ORDERS // 3 + 1  # 3 micro-batches per run
PARTITIONS = 3
BASE_MS = 1_700_000_000_000


class SimulatedKill(Exception):
    """Raised where a SIGKILL would have stopped the job: after the sink wrote, before the commit."""


class MicroBatchReplay:
    """What Structured Streaming does for the streaming job, step by step, with a real Kafka
    client (confluent-kafka) in place of Spark's connector:

    1. plan the batch's offset range per partition (from the previous batch's end up to the latest
       offset, at most MAX_RECORDS_PER_BATCH records shared in proportion to each partition's
       backlog, as maxOffsetsPerTrigger is) and write it to offsets/<batch> before
       anything else, as Spark's offset log; a batch already planned but not committed is re-run
       on the same range (Spark's recovery);
    2. read exactly that range with assign + seek, read_committed;
    3. keep the batch's records as state (state/<batch>.parquet; Spark keeps aggregates instead,
       the result per key is the same) and compute orders.order_totals_changelog over the state
       of the keys this batch touched: update mode's output;
    4. write those rows to the changelog topic with an idempotent producer, then commits/<batch>.
    """

    def __init__(self, spark, bootstrap: str, topic: str, changelog_topic: str, checkpoint: Path):
        self.spark, self.bootstrap, self.topic, self.changelog_topic = spark, bootstrap, topic, changelog_topic
        self.checkpoint = checkpoint
        for folder in ("offsets", "commits", "state"):
            (checkpoint / folder).mkdir(parents=True, exist_ok=True)
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{changelog_topic}-unused",
                                  "enable.auto.commit": False, "isolation.level": "read_committed",
                                  "auto.offset.reset": "error"})
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})

    def close(self):
        self.consumer.close()
        self.producer.flush(30)

    def _log(self, folder: str) -> dict[int, dict]:
        return {int(p.name): json.loads(p.read_text()) for p in (self.checkpoint / folder).iterdir()
                if p.name.isdigit()}

    def _write_atomically(self, path: Path, data: dict) -> None:
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)

    def _latest_offsets(self) -> dict[int, int]:
        return {p: self.consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=10)[1]
                for p in range(PARTITIONS)}

    def plan_batch(self) -> tuple[int, dict[str, dict[int, int]]] | None:
        """The next batch's id and range, or None when caught up."""
        planned, committed = self._log("offsets"), self._log("commits")
        if planned and max(planned) not in committed:
            batch = max(planned)  # planned (maybe written to the sink) but not committed: run it again
            return batch, {k: {int(p): o for p, o in v.items()} for k, v in planned[batch].items()}
        batch = max(planned) + 1 if planned else 0
        start = ({int(p): o for p, o in planned[batch - 1]["end"].items()} if planned
                 else {p: 0 for p in range(PARTITIONS)})
        latest = self._latest_offsets()
        backlog = {p: latest[p] - start[p] for p in range(PARTITIONS)}
        if not any(backlog.values()):
            return None
        # maxOffsetsPerTrigger, shared among partitions in proportion to their backlog, as Spark does.
        total = sum(backlog.values())
        end = {p: start[p] + min(backlog[p], -(-MAX_RECORDS_PER_BATCH * backlog[p] // total))
               for p in range(PARTITIONS)}
        self._write_atomically(self.checkpoint / "offsets" / str(batch), {"start": start, "end": end})
        return batch, {"start": start, "end": end}

    def read_range(self, start: dict[int, int], end: dict[int, int]) -> list[tuple]:
        wanted = {p for p in range(PARTITIONS) if end[p] > start[p]}
        self.consumer.assign([TopicPartition(self.topic, p, start[p]) for p in wanted])
        rows, done, deadline = [], set(), time.monotonic() + 60
        while done != wanted:
            assert time.monotonic() < deadline, f"could not read {start} .. {end}; at {len(rows)} records"
            for message in self.consumer.consume(1000, timeout=0.05):
                assert not message.error(), message.error()
                p, offset = message.partition(), message.offset()
                if offset >= end[p]:
                    done.add(p)
                    continue
                rows.append((message.key(), message.value(), self.topic, p, offset,
                             at(message.timestamp()[1]), message.timestamp()[0] - 1))
                if offset == end[p] - 1:
                    done.add(p)
        return rows

    def run_batch(self, batch: int, offsets: dict, kill_after_sink: bool = False) -> int:
        records = self.spark.createDataFrame(self.read_range(offsets["start"], offsets["end"]),
                                             KAFKA_SOURCE_SCHEMA)
        records.write.mode("overwrite").parquet(str(self.checkpoint / "state" / f"{batch}.parquet"))
        state = self.spark.read.parquet(*[str(self.checkpoint / "state" / f"{b}.parquet") for b in range(batch + 1)])
        touched = records.select("key").distinct()
        updates = orders.order_totals_changelog(state.join(F.broadcast(touched), "key", "left_semi")).collect()
        for row in updates:
            self.producer.produce(self.changelog_topic, key=row.key.encode(), value=row.value.encode())
            self.producer.poll(0)
        assert self.producer.flush(30) == 0, "changelog records not acknowledged"
        if kill_after_sink:
            raise SimulatedKill(batch)
        self._write_atomically(self.checkpoint / "commits" / str(batch), {"rows": len(updates)})
        return len(updates)

    def run_until_caught_up(self, kill_after_sink_of_batch: int | None = None) -> int:
        batches = 0
        while (planned := self.plan_batch()) is not None:
            batch, offsets = planned
            self.run_batch(batch, offsets, kill_after_sink=batch == kill_after_sink_of_batch)
            batches += 1
        return batches


def read_topic(bootstrap: str, topic: str) -> list[tuple]:
    """Every record of a topic from the start, as Kafka-source-shaped rows (a fresh consumer)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader", "enable.auto.commit": False})
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics[topic]
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in metadata.partitions}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in ends if ends[p] > 0])
        rows, deadline = [], time.monotonic() + 60
        while len(rows) < sum(ends.values()):
            assert time.monotonic() < deadline, f"read {len(rows)} of {sum(ends.values())} records of {topic}"
            for m in consumer.consume(1000, timeout=0.05):
                assert not m.error(), m.error()
                rows.append((m.key(), m.value(), topic, m.partition(), m.offset(), at(m.timestamp()[1]), 0))
        return rows
    finally:
        consumer.close()


def view_of(spark, bootstrap: str, changelog_topic: str) -> tuple[dict, int]:
    """The compacted view a consumer rebuilds from the changelog topic, and how many records it read."""
    records = read_topic(bootstrap, changelog_topic)
    view = orders.parse_changelog(orders.compacted_view(spark.createDataFrame(records, KAFKA_SOURCE_SCHEMA)))
    return {r.customer: (r.orders, r.total_cents, r.last_order_ms) for r in view.collect()}, len(records)


@pytest.mark.clients
def test_simulated_kill_and_restart_of_the_streaming_job_gives_the_uninterrupted_view(spark, broker, tmp_path):
    """The streaming job's semantics over a real broker, WITHOUT Spark's Kafka connector.

    What runs: `orders.order_totals_changelog` (the job's transformation) inside MicroBatchReplay,
    which follows Spark's micro-batch protocol (offset log, then read, then sink, then commit) with
    confluent-kafka reading offset ranges (assign/seek, read_committed) and writing the changelog.
    One run is killed (an exception where SIGKILL would land: after its sink wrote batch 1, before
    the commit) and restarted from its checkpoint folder by a fresh instance; the other runs
    uninterrupted. Both views, rebuilt by reading each changelog topic from the start, must equal
    each other and the totals computed directly from what was produced.

    What it proves: the broker serves exact offset ranges and keeps what it acknowledged, the
    transformation is deterministic so a re-run batch rewrites identical values, and an
    at-least-once changelog (the re-run batch's rows appear twice) still rebuilds the same view.
    What it does not prove: that Spark's connector, checkpoint and state store do the same on this
    broker; test_pipelines_connector.py runs the real job for that when the connector is installed.
    """
    bootstrap = broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    compacted = {"cleanup.policy": "compact"}
    topics = [NewTopic("orders", PARTITIONS, 1), NewTopic("view-uninterrupted", 2, 1, config=compacted),
              NewTopic("view-killed", 2, 1, config=compacted)]
    for future in admin.create_topics(topics).values():
        future.result(30)

    expected: dict[str, list[int]] = {}
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 20})
    for i in range(N_ORDERS):
        customer, cents, ms = f"customer-{(i * 7919) % N_CUSTOMERS}", (i * 37) % 10_000 - 500, BASE_MS + i
        producer.produce("orders", key=customer, value=order(f"o{i}", cents), timestamp=ms)
        totals = expected.setdefault(customer, [0, 0, 0])
        totals[0], totals[1], totals[2] = totals[0] + 1, totals[1] + cents, max(totals[2], ms)
        if i % 10_000 == 0:
            producer.poll(0)
    producer.produce("orders", key="customer-0", value=b"garbage", timestamp=BASE_MS)  # rejected by the parser
    assert producer.flush(60) == 0

    uninterrupted = MicroBatchReplay(spark, bootstrap, "orders", "view-uninterrupted", tmp_path / "uninterrupted")
    try:
        assert uninterrupted.run_until_caught_up() == 3
    finally:
        uninterrupted.close()

    killed = MicroBatchReplay(spark, bootstrap, "orders", "view-killed", tmp_path / "killed")
    with pytest.raises(SimulatedKill):
        killed.run_until_caught_up(kill_after_sink_of_batch=1)
    killed.close()
    restarted = MicroBatchReplay(spark, bootstrap, "orders", "view-killed", tmp_path / "killed")
    try:
        restarted.run_until_caught_up()
    finally:
        restarted.close()

    view_uninterrupted, records_uninterrupted = view_of(spark, bootstrap, "view-uninterrupted")
    view_killed, records_killed = view_of(spark, bootstrap, "view-killed")
    assert view_uninterrupted == {c: tuple(t) for c, t in expected.items()}
    assert view_killed == view_uninterrupted
    # The kill landed after the sink: batch 1's rows were written twice, and the view did not care.
    assert records_killed > records_uninterrupted


def test_replay_job_writes_the_recomputed_view_and_counts_rejected_records(spark, tmp_path, monkeypatch, capsys):
    """order_totals_replay.replay end to end except the Kafka read, which is swapped for the
    static records (the connector is not installed here)."""
    from pipelines import order_totals_replay

    args = order_totals_replay.parse_arguments([
        "--bootstrap-servers", "127.0.0.1:9", "--topic", "orders", "--output-path", str(tmp_path / "view")])
    monkeypatch.setattr(order_totals_replay, "read_slice",
                        lambda session, _: session.createDataFrame(RECORDS, KAFKA_SOURCE_SCHEMA))
    counts = order_totals_replay.replay(spark, args)
    assert counts == {"records": len(RECORDS), "rejected": 6, "customers": 2}
    written = [json.loads(line) for part in sorted((tmp_path / "view").glob("part-*.json"))
               for line in part.read_text().splitlines()]
    assert sorted(written, key=lambda r: r["customer"]) == [
        {"customer": "alice", "orders": 2, "total_cents": 1000, "last_order_ms": 3_000},
        {"customer": "bob", "orders": 2, "total_cents": 1200, "last_order_ms": 9_000}]
    shown = capsys.readouterr().out  # the view, then the rejected records with where they are
    assert "|alice   |2     |1000       |3000         |" in shown
    assert "|orders|0        |5     |carol   |" in shown


def test_changelog_topic_is_created_compacted_and_a_non_compacted_one_is_refused(broker):
    from pipelines.changelog_topic import ChangelogTopicError, cleanup_policy, ensure_compacted_topic
    from client import WireClient

    assert ensure_compacted_topic(broker.bootstrap, "order-totals", partitions=2) is True
    assert ensure_compacted_topic(broker.bootstrap, "order-totals") is False  # exists, compacted: fine
    with WireClient(broker.bootstrap) as client:
        assert cleanup_policy(client, "order-totals") == "compact"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("plain", 1, 1)])["plain"].result(30)
    with pytest.raises(ChangelogTopicError, match="cleanup.policy=delete"):
        ensure_compacted_topic(broker.bootstrap, "plain")
    with pytest.raises(ChangelogTopicError, match="no bootstrap server reachable"):
        ensure_compacted_topic("127.0.0.1:1", "x", timeout=2)
