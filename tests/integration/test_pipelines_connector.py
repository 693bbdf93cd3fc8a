"""End to end with Spark's own Kafka connector: broker + pipeline jobs + spark-sql-kafka-0-10.

The connector's jars are the ones `--packages org.apache.spark:spark-sql-kafka-0-10_2.13:<pyspark
version>` adds: scripts/setup-tests.sh resolves them from Maven Central (pipelines/connector/pom.xml)
into .deps/java/spark-kafka-<pyspark version>/, where the jobs find them with nothing set
(KAFKA_WIRE_SPARK_JARS overrides). Without them the tests are skipped locally and fail under
CI=true. The jobs run as a user runs them: `python -m pipelines.<job> ...` in their own
processes, each starting its own Spark (local[2]) in the test's scratch directory. Jobs that do not
depend on each other run at the same time (each is a JVM start and mostly waits on 2 cores), and
the module's tests share one broker, whose orders topic is produced once.

The acceptance check: the streaming job, killed (SIGKILL, driver and JVM) once mid-way and
restarted on its checkpoint, produces the same compacted view as an uninterrupted run, and both
equal the totals computed directly from what was produced. Then the replay job recomputes the
view over a timestamp range and over per-partition offsets. CI runs 20k orders; KW_SLOW=1 runs
100k with Spark's default settings (see SLOW below).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipelines.spark_session import (
    JARS_ENV,
    checkout_connector_folder,
    connector_coordinates,
    connector_jars,
    missing_connector_jars,
)
from testing.broker_process import free_port, running_broker
from tests.conftest import missing_tool

confluent_kafka = pytest.importorskip("confluent_kafka")
pytest.importorskip("pyspark")

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

# CI's short form: 20k orders, the killed job in 5 micro-batches, Spark with 2 shuffle partitions
# (a stateful micro-batch over Spark's default 200 costs ~20 s on 2 loaded cores, and the Kafka
# side is the same). KW_SLOW=1: 100k orders in 10 micro-batches, Spark's defaults as users run it.
SLOW = os.environ.get("KW_SLOW") == "1"
N_ORDERS = 100_000 if SLOW else 20_000
KILLED_RUN_BATCHES = 10 if SLOW else 5
UNINTERRUPTED_RUN_BATCHES = 4 if SLOW else 2
SPARK_SUBMIT_ARGS = "pyspark-shell" if SLOW else "--conf spark.sql.shuffle.partitions=2 pyspark-shell"
N_CUSTOMERS = 2_000
PARTITIONS = 3
BASE_MS = 1_700_000_000_000
JOB_TIMEOUT = 600

pytestmark = [pytest.mark.clients, pytest.mark.slow, pytest.mark.timeout(3 * JOB_TIMEOUT)]


@pytest.fixture(scope="module")
def connector_env():
    """The environment the jobs run in: Spark on loopback only. The jobs find the connector's jars
    as a user's checkout does: KAFKA_WIRE_SPARK_JARS when set, else the ones scripts/setup-tests.sh
    resolved from Maven Central into .deps/java/spark-kafka-<pyspark version>/."""
    try:
        jars = connector_jars()
    except FileNotFoundError as error:
        pytest.fail(f"{JARS_ENV} names something that is not there: {error}", pytrace=False)
    missing = missing_connector_jars(jars)
    if missing:
        where = f"{JARS_ENV} lacks" if JARS_ENV in os.environ else f"{checkout_connector_folder()} lacks"
        missing_tool(f"Spark's Kafka connector ({where} {', '.join(missing)}; setup-tests.sh resolves "
                     f"{connector_coordinates()} from Maven Central)")
    # PYSPARK_SUBMIT_ARGS: what pyspark hands spark-submit when it starts the JVM; the console
    # progress bar is off so that a failing job's log tail shows its errors.
    submit_args = f"--conf spark.ui.showConsoleProgress=false --conf spark.ui.enabled=false {SPARK_SUBMIT_ARGS}"
    return dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYTHONUNBUFFERED="1", PYSPARK_SUBMIT_ARGS=submit_args)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """The module's broker, with its Schema Registry (for the Avro variant) on a port of its own."""
    with running_broker(tmp_path_factory.mktemp("connector-broker"),
                        config={"schema.registry.port": free_port()}) as started:
        yield started


@pytest.fixture(scope="module")
def produced(broker) -> list[tuple[str, int, int, int, int]]:
    """The orders topic, produced once for the module: what produce_orders returns."""
    return produce_orders(broker.bootstrap)


def registry_url(broker) -> str:
    return f"http://127.0.0.1:{broker.config['schema.registry.port']}"


def job(name: str, *args: str) -> list[str]:
    return [sys.executable, "-m", f"pipelines.{name}", *args, "--master", "local[2]"]


class Jobs:
    """Pipeline jobs running at the same time, each in its own process (group) with its own log:
    started by start(), waited for by wait(), which asserts each one exited with status 0. Used as
    a context manager, jobs still running when the block ends are SIGKILLed (driver and JVM)."""

    def __init__(self, env: dict):
        self.env = env
        self.running: list[tuple[list[str], Path, subprocess.Popen]] = []

    def start(self, command: list[str], log: Path) -> subprocess.Popen:
        with open(log, "ab") as out:
            process = subprocess.Popen(command, cwd=log.parent, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True)
        self.running.append((command, log, process))
        return process

    def wait(self) -> None:
        deadline = time.monotonic() + JOB_TIMEOUT
        while self.running:
            command, log, process = self.running[0]
            returncode = process.wait(max(1.0, deadline - time.monotonic()))
            self.running.pop(0)
            assert returncode == 0, f"{' '.join(command)} exited with {returncode}:\n{log.read_text()[-6000:]}"

    def __enter__(self) -> Jobs:
        return self

    def __exit__(self, *exc) -> None:
        for _, _, process in self.running:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(30)


def run_job(command: list[str], env: dict, log: Path) -> None:
    run_jobs(env, (command, log))


def run_jobs(env: dict, *jobs: tuple[list[str], Path]) -> None:
    """Runs the jobs (command, log) at the same time; each must exit with status 0."""
    with Jobs(env) as running:
        for command, log in jobs:
            running.start(command, log)
        running.wait()


def produce_orders(bootstrap: str) -> list[tuple[str, int, int, int, int]]:
    """N_ORDERS orders; returns (customer, cents, timestamp ms, partition, offset) of each, as acked."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    # The orders carry 2023 timestamps (BASE_MS): under the default 7-day retention the broker's
    # first retention check (5 minutes after it started) would delete them all, as Kafka does, and a
    # job still reading would fail with data loss. They are kept for good.
    for future in admin.create_topics([NewTopic("orders", PARTITIONS, 1, config={"retention.ms": "-1"})]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 20})
    acked: dict[int, tuple] = {}

    def delivered(error, message, planned):
        assert error is None, error
        acked[planned[0]] = (*planned[1:], message.partition(), message.offset())

    for i in range(N_ORDERS):
        customer, cents, ms = f"customer-{(i * 7919) % N_CUSTOMERS}", (i * 37) % 10_000 - 500, BASE_MS + i
        producer.produce("orders", key=customer, value=json.dumps({"order_id": f"o{i}", "amount_cents": cents}),
                         timestamp=ms, on_delivery=lambda e, m, p=(i, customer, cents, ms): delivered(e, m, p))
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0
    assert len(acked) == N_ORDERS
    return [acked[i] for i in range(N_ORDERS)]


def totals(orders) -> dict[str, dict]:
    view: dict[str, dict] = {}
    for customer, cents, ms, _, _ in orders:
        t = view.setdefault(customer, {"customer": customer, "orders": 0, "total_cents": 0, "last_order_ms": 0})
        t["orders"] += 1
        t["total_cents"] += cents
        t["last_order_ms"] = max(t["last_order_ms"], ms)
    return view


def read_view(bootstrap: str, topic: str) -> tuple[dict[str, dict], int]:
    """The changelog topic read from the start by a plain consumer: last value per key, and how
    many records it held."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader", "enable.auto.commit": False})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in partitions}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p, end in ends.items() if end])
        latest: dict[str, tuple] = {}
        seen, deadline = 0, time.monotonic() + 120
        while seen < sum(ends.values()):
            assert time.monotonic() < deadline, f"read {seen} of {sum(ends.values())} records of {topic}"
            for m in consumer.consume(1000, timeout=0.1):
                assert not m.error(), m.error()
                seen += 1
                key = m.key().decode()
                if key not in latest or (m.timestamp()[1], m.offset()) >= latest[key][:2]:
                    latest[key] = (m.timestamp()[1], m.offset(), m.value())
        return {k: json.loads(v) for k, (_, _, v) in latest.items() if v is not None}, seen
    finally:
        consumer.close()


def test_streaming_job_killed_and_restarted_gives_the_uninterrupted_view(broker, produced, connector_env, tmp_path):
    bootstrap = broker.bootstrap
    expected = totals(produced)

    def stream(view: str, checkpoint: Path, per_trigger: int) -> list[str]:
        return job("order_totals_stream", "--bootstrap-servers", bootstrap, "--topic", "orders",
                   "--changelog-topic", view, "--checkpoint-dir", str(checkpoint),
                   "--trigger", "available-now", "--max-offsets-per-trigger", str(per_trigger))

    # The uninterrupted run goes on while the same job, on its own checkpoint and changelog topic,
    # is SIGKILLed (driver and its JVM) once two micro-batches have committed, then started again
    # on the same checkpoint.
    with Jobs(connector_env) as uninterrupted:
        uninterrupted.start(stream("view-uninterrupted", tmp_path / "ck-uninterrupted",
                                   N_ORDERS // UNINTERRUPTED_RUN_BATCHES), tmp_path / "uninterrupted.log")
        checkpoint, log = tmp_path / "ck-killed", tmp_path / "killed.log"
        command = stream("view-killed", checkpoint, N_ORDERS // KILLED_RUN_BATCHES)
        with open(log, "ab") as out:
            process = subprocess.Popen(command, cwd=tmp_path, env=connector_env, stdout=out,
                                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            deadline = time.monotonic() + JOB_TIMEOUT
            while len(list((checkpoint / "commits").glob("[0-9]*"))) < 2:
                assert process.poll() is None, f"the job ended (status {process.returncode}) before it could be " \
                                               f"killed:\n{log.read_text()[-6000:]}"
                assert time.monotonic() < deadline, "no two micro-batches committed in time"
                time.sleep(0.2)
        finally:
            os.killpg(process.pid, signal.SIGKILL)  # the group this test started: the driver and its JVM
            process.wait(30)
        committed_before_kill = len(list((checkpoint / "commits").glob("[0-9]*")))
        assert committed_before_kill < KILLED_RUN_BATCHES, "the job had finished: the kill tested nothing"
        run_job(command, connector_env, log)
        uninterrupted.wait()

    view_uninterrupted, _ = read_view(bootstrap, "view-uninterrupted")
    view_killed, _ = read_view(bootstrap, "view-killed")
    assert view_uninterrupted == expected
    assert view_killed == view_uninterrupted


def test_replay_job_recomputes_the_view_over_a_time_range_and_an_offset_range(broker, produced, connector_env,
                                                                              tmp_path):
    bootstrap = broker.bootstrap

    # By time: the orders from 20% to 70% of the run (order i has timestamp BASE_MS + i), on every
    # partition. By offsets: partition 0 from offset 1000 to 5000 (100k orders; 200 to 1000 of
    # 20k), the others whole (-2 earliest, -1 latest). The two replays run at the same time.
    start_ms, end_ms = BASE_MS + N_ORDERS // 5, BASE_MS + N_ORDERS * 7 // 10
    first, end = N_ORDERS // 100, N_ORDERS // 20
    offsets = json.dumps({"orders": {"0": first, "1": -2, "2": -2}})
    until = json.dumps({"orders": {"0": end, "1": -1, "2": -1}})
    output = tmp_path / "by-offsets"
    run_jobs(connector_env,
             (job("order_totals_replay", "--bootstrap-servers", bootstrap, "--topic", "orders",
                  "--starting-timestamp", str(start_ms), "--ending-timestamp", str(end_ms),
                  "--changelog-topic", "view-by-time", "--show", "0"), tmp_path / "by-time.log"),
             (job("order_totals_replay", "--bootstrap-servers", bootstrap, "--topic", "orders",
                  "--starting-offsets", offsets, "--ending-offsets", until, "--output-path", str(output),
                  "--show", "0"), tmp_path / "by-offsets.log"))

    view, _ = read_view(bootstrap, "view-by-time")
    assert view == totals([o for o in produced if start_ms <= o[2] < end_ms])
    rows = [json.loads(line) for part in sorted(output.glob("part-*.json")) for line in part.read_text().splitlines()]
    selected = [o for o in produced if o[3] != 0 or first <= o[4] < end]
    assert {r["customer"]: r for r in rows} == totals(selected)


# --- the Avro variant: values in the Schema Registry's wire format, decoded with from_avro -------

ORDER_V1 = {"type": "record", "name": "Order", "namespace": "shop",
            "fields": [{"name": "order_id", "type": "string"}, {"name": "amount_cents", "type": "long"}]}
# Version 2 adds a field with a default: BACKWARD compatible (the registry's default level), so the
# job reads version-1 orders with version 2 as the reader's schema.
ORDER_V2 = {**ORDER_V1, "fields": [*ORDER_V1["fields"], {"name": "currency", "type": "string", "default": "EUR"}]}
N_AVRO_ORDERS = 1_000


def produce_avro_orders(bootstrap: str, registry_url: str, topic: str) -> tuple[list[tuple], int]:
    """Half the orders serialized with version 1 of `<topic>-value`, half with version 2 (both
    registered by confluent-kafka's AvroSerializer), then three values that are not orders of the
    subject. Returns the acked orders as produce_orders does, and the number of bad values."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, 2, 1, config={"retention.ms": "-1"})]).values():
        future.result(30)
    client = SchemaRegistryClient({"url": registry_url})
    serializers = [AvroSerializer(client, json.dumps(ORDER_V1)), AvroSerializer(client, json.dumps(ORDER_V2))]
    context = SerializationContext(topic, MessageField.VALUE)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 20})
    acked: dict[int, tuple] = {}
    for i in range(N_AVRO_ORDERS):
        customer, cents, ms = f"customer-{(i * 7919) % 300}", (i * 37) % 10_000 - 500, BASE_MS + i
        order = {"order_id": f"o{i}", "amount_cents": cents}
        if i >= N_AVRO_ORDERS // 2:
            order["currency"] = "SEK"
        value = serializers[i >= N_AVRO_ORDERS // 2](order, context)

        def delivered(error, message, planned=(i, customer, cents, ms)):
            assert error is None, error
            acked[planned[0]] = (*planned[1:], message.partition(), message.offset())

        producer.produce(topic, key=customer, value=value, timestamp=ms, on_delivery=delivered)
    first_id = int.from_bytes(serializers[0]({"order_id": "x", "amount_cents": 1}, context)[1:5], "big")
    bad = [
        json.dumps({"order_id": "json", "amount_cents": 5}).encode(),  # no magic byte: not Avro framed
        b"\x00" + (first_id + 1000).to_bytes(4, "big") + b"\x02x\x02",  # an id the subject does not have
        b"\x00" + first_id.to_bytes(4, "big") + b"\x08ab",  # the subject's id, bytes that do not decode
    ]
    for value in bad:
        producer.produce(topic, key="customer-bad", value=value, timestamp=BASE_MS)
    assert producer.flush(120) == 0
    assert len(acked) == N_AVRO_ORDERS
    versions = client.get_versions(f"{topic}-value")
    assert len(versions) == 2, versions
    return [acked[i] for i in range(N_AVRO_ORDERS)], len(bad)


def test_avro_orders_through_the_schema_registry_give_the_same_view(broker, connector_env, tmp_path):
    """The orders stream and the replay with --value-format avro: the broker's own Schema Registry
    serves the schemas, Spark's from_avro (spark-avro from Maven Central, beside the connector)
    decodes both versions, and the values that are not orders of the subject are rejected. The
    stream and the replay run at the same time."""
    bootstrap, registry = broker.bootstrap, registry_url(broker)
    produced, bad = produce_avro_orders(bootstrap, registry, "orders-avro")
    expected = totals(produced)
    avro = ("--topic", "orders-avro", "--value-format", "avro", "--schema-registry-url", registry)

    log = tmp_path / "avro-replay.log"
    run_jobs(connector_env,
             (job("order_totals_stream", "--bootstrap-servers", bootstrap, *avro,
                  "--changelog-topic", "view-avro", "--checkpoint-dir", str(tmp_path / "ck-avro"),
                  "--trigger", "available-now"), tmp_path / "avro-stream.log"),
             (job("order_totals_replay", "--bootstrap-servers", bootstrap, *avro, "--show", "0"), log))
    view, _ = read_view(bootstrap, "view-avro")
    assert view == expected
    summary = log.read_text()
    assert f"replayed {N_AVRO_ORDERS + bad} records: {len(expected)} customers, {bad} records rejected" \
        in summary, summary[-3000:]


def test_avro_job_without_the_subject_is_one_clear_line(broker, connector_env, tmp_path):
    registry = registry_url(broker)
    done = subprocess.run(job("order_totals_replay", "--bootstrap-servers", broker.bootstrap,
                              "--topic", "nothing-here", "--value-format", "avro",
                              "--schema-registry-url", registry),
                          env=connector_env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done
    assert done.stderr.strip().splitlines() == [
        f"error: {registry}/subjects/nothing-here-value/versions: HTTP 404: 40401 "
        f"Subject 'nothing-here-value' not found."], done.stderr
