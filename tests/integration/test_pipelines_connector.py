"""End to end with Spark's own Kafka connector: broker + pipeline jobs + spark-sql-kafka-0-10.

Runs only when the connector's jars are on this machine, named by KAFKA_WIRE_SPARK_JARS
(comma-separated jar files or folders holding them):

    spark-sql-kafka-0-10_2.13-<pyspark version>.jar
    spark-token-provider-kafka-0-10_2.13-<pyspark version>.jar
    kafka-clients-3.9.0.jar (what Spark 4.0.0's connector is built on; .deps/java/kafka-3.9.0/ has it)
    commons-pool2-2.12.0.jar (or whichever version that Spark release depends on)

and is skipped, saying which are missing, otherwise (they are not in the registries the test
setup installs from). The jobs run as a user runs them: `python -m pipelines.<job> ...` in their
own processes, each starting its own Spark (local[2]) in the test's scratch directory.

The acceptance check: the streaming job over 100k orders, killed (SIGKILL) once mid-way and
restarted on its checkpoint, produces the same compacted view as an uninterrupted run, and both
equal the totals computed directly from what was produced. Then the replay job recomputes the
view over a timestamp range and over per-partition offsets.
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

from pipelines.spark_session import JARS_ENV, connector_jars, missing_connector_jars

confluent_kafka = pytest.importorskip("confluent_kafka")
pytest.importorskip("pyspark")

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

N_ORDERS = 100_000
N_CUSTOMERS = 2_000
PARTITIONS = 3
BASE_MS = 1_700_000_000_000
JOB_TIMEOUT = 600

pytestmark = [pytest.mark.clients, pytest.mark.timeout(3 * JOB_TIMEOUT)]


@pytest.fixture(scope="module")
def connector_env():
    """The environment the jobs run in: the connector's jars, Spark on loopback only."""
    try:
        jars = connector_jars()
    except FileNotFoundError as error:
        pytest.skip(f"{JARS_ENV} names something that is not there: {error}")
    missing = missing_connector_jars(jars)
    if missing:
        pytest.skip(f"Spark's Kafka connector jars are not available ({JARS_ENV} "
                    f"{'is not set' if not jars else 'lacks ' + ', '.join(missing)}); they are not in PyPI, npm or "
                    f"Debian. Set {JARS_ENV} to spark-sql-kafka-0-10, spark-token-provider-kafka-0-10, kafka-clients "
                    f"and commons-pool2 jars to run this test")
    return dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYTHONUNBUFFERED="1", **{JARS_ENV: ",".join(jars)})


def job(name: str, *args: str) -> list[str]:
    return [sys.executable, "-m", f"pipelines.{name}", *args, "--master", "local[2]"]


def run_job(command: list[str], env: dict, log: Path) -> None:
    with open(log, "ab") as out:
        done = subprocess.run(command, cwd=log.parent, env=env, stdout=out, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, timeout=JOB_TIMEOUT)
    assert done.returncode == 0, f"{' '.join(command)} exited with {done.returncode}:\n{log.read_text()[-6000:]}"


def produce_orders(bootstrap: str) -> list[tuple[str, int, int, int, int]]:
    """100k orders; returns (customer, cents, timestamp ms, partition, offset) of each, as acked."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic("orders", PARTITIONS, 1)]).values():
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


def test_streaming_job_killed_and_restarted_gives_the_uninterrupted_view(broker, connector_env, tmp_path):
    bootstrap = broker.bootstrap
    produced = produce_orders(bootstrap)
    expected = totals(produced)

    def stream(view: str, checkpoint: Path, per_trigger: int) -> list[str]:
        return job("order_totals_stream", "--bootstrap-servers", bootstrap, "--topic", "orders",
                   "--changelog-topic", view, "--checkpoint-dir", str(checkpoint),
                   "--trigger", "available-now", "--max-offsets-per-trigger", str(per_trigger))

    run_job(stream("view-uninterrupted", tmp_path / "ck-uninterrupted", 25_000), connector_env,
            tmp_path / "uninterrupted.log")

    # The same job, SIGKILLed (driver and its JVM) once two micro-batches have committed, then
    # started again on the same checkpoint.
    checkpoint, log = tmp_path / "ck-killed", tmp_path / "killed.log"
    command = stream("view-killed", checkpoint, 10_000)
    with open(log, "ab") as out:
        process = subprocess.Popen(command, cwd=tmp_path, env=connector_env, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
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
    assert committed_before_kill < N_ORDERS // 10_000, "the job had finished: the kill tested nothing"
    run_job(command, connector_env, log)

    view_uninterrupted, _ = read_view(bootstrap, "view-uninterrupted")
    view_killed, _ = read_view(bootstrap, "view-killed")
    assert view_uninterrupted == expected
    assert view_killed == view_uninterrupted


def test_replay_job_recomputes_the_view_over_a_time_range_and_an_offset_range(broker, connector_env, tmp_path):
    bootstrap = broker.bootstrap
    produced = produce_orders(bootstrap)

    # By time: [BASE_MS + 20_000, BASE_MS + 70_000) on every partition.
    start_ms, end_ms = BASE_MS + 20_000, BASE_MS + 70_000
    run_job(job("order_totals_replay", "--bootstrap-servers", bootstrap, "--topic", "orders",
                "--starting-timestamp", str(start_ms), "--ending-timestamp", str(end_ms),
                "--changelog-topic", "view-by-time", "--show", "0"), connector_env, tmp_path / "by-time.log")
    view, _ = read_view(bootstrap, "view-by-time")
    assert view == totals([o for o in produced if start_ms <= o[2] < end_ms])

    # By offsets: partition 0 from offset 1000 to 5000, the others whole (-2 earliest, -1 latest).
    offsets = json.dumps({"orders": {"0": 1000, "1": -2, "2": -2}})
    until = json.dumps({"orders": {"0": 5000, "1": -1, "2": -1}})
    output = tmp_path / "by-offsets"
    run_job(job("order_totals_replay", "--bootstrap-servers", bootstrap, "--topic", "orders",
                "--starting-offsets", offsets, "--ending-offsets", until, "--output-path", str(output),
                "--show", "0"), connector_env, tmp_path / "by-offsets.log")
    rows = [json.loads(line) for part in sorted(output.glob("part-*.json")) for line in part.read_text().splitlines()]
    selected = [o for o in produced if o[3] != 0 or 1000 <= o[4] < 5000]
    assert {r["customer"]: r for r in rows} == totals(selected)
