"""Kafka Streams with processing.guarantee=exactly_once_v2 against kafka-wire, under kills.

The application (compat/peers/src/EosStreamsApp.java, Kafka Streams from Maven Central) re-keys its
input through a repartition topic, joins it with a KTable, and keeps a plain and a windowed
aggregation in state stores with changelog topics; with the record cache off, every input event
yields exactly one record on each of its three outputs. Two instances share the work; the input
arrives in three parts. While the second is processed one instance is SIGKILLed (the other takes its
tasks over, restoring their stores from the changelogs); while the third is, the broker is SIGKILLed
and restarted: each kill leaves a transaction with records in it open. The outputs, read
read_committed, must then equal what Python computes from the input:
no event lost, none counted twice. Afterwards Kafka's kafka-streams-application-reset tool
(StreamsResetter) resets the application against kafka-wire; with group.protocol=streams (KIP-1071:
the broker assigns the tasks and creates the internal topics) kafka-streams-groups --reset-offsets
--delete-all-internal-topics does, and the same scenario runs on Apache Kafka 4.3.0 as well.

CI runs the single-node scenario with Kafka Streams 4.3.0 (classic with one worker process; streams
with two, which covers the one-process streams path too). KW_SLOW=1 adds the streams protocol with
one worker process (50 s), the streams protocol on the reference Kafka (the application checked
against Kafka itself, 70 s), Kafka Streams 3.9.1, and the 3-broker cluster (RF=3) where the broker
leading the changelog partitions is SIGKILLed, with either protocol.
"""

from __future__ import annotations

import os
import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from testing.broker_process import BrokerProcess
from compat import peers
from compat.reference_kafka import KAFKA_3, KAFKA_4, install, run_tool
from tests.conftest import missing_tool
from tests.integration.peers_helpers import TopicReader, create_topics, produce, require_peers, topic_names

SLOW = os.environ.get("KW_SLOW") == "1"
PARTITIONS = 3
USERS = 12
REGIONS = ("emea", "apac", "amer")
WINDOW_MS = 10_000
EVENTS = 3000 if SLOW else 1500
OUTPUTS = ("enriched", "totals", "windowed")


def user_of(i: int) -> str:
    return f"u{(i * 7) % USERS}"


def events(base_ms: int) -> list[tuple[str, str, int, int, int]]:
    """(event id, user, amount, timestamp, input partition) per event; a user's events all go to one
    input partition, so they reach the repartition topic, and the stores, in input order."""
    out = []
    for i in range(EVENTS):
        user = user_of(i)
        out.append((f"e{i}", user, (i * 37) % 100 + 1, base_ms + i * 100, int(user[1:]) % PARTITIONS))
    return out


def region_of(user: str) -> str:
    return REGIONS[int(user[1:]) % len(REGIONS)]


def expected_outputs(inputs: list[tuple[str, str, int, int, int]]) -> dict[str, dict[str, list[str]]]:
    """Each output topic's values per key, in order, computed from the input alone."""
    enriched: dict[str, list[str]] = {}
    totals: dict[str, list[str]] = {}
    windowed: dict[str, list[str]] = {}
    running: dict[str, tuple[int, int]] = {}
    window_counts: dict[str, int] = {}
    for event_id, user, amount, timestamp, _ in inputs:
        enriched.setdefault(user, []).append(f"{event_id},{region_of(user)},{amount}")
        count, total = running.get(user, (0, 0))
        running[user] = (count + 1, total + amount)
        totals.setdefault(user, []).append(f"{count + 1},{total + amount}")
        window = f"{user}@{timestamp - timestamp % WINDOW_MS}"
        window_counts[window] = window_counts.get(window, 0) + 1
        windowed.setdefault(window, []).append(str(window_counts[window]))
    return {"enriched": enriched, "totals": totals, "windowed": windowed}


def streams_instance(version: str, bootstrap: str, app: str, state_dir, log_path,
                     protocol: str = "classic") -> peers.JavaProcess:
    extra = [f"group.protocol={protocol}"] if protocol != "classic" else []
    command = peers.java_command(
        version, peers.STREAMS_APP, bootstrap, app, str(state_dir), *extra,
        # The survivor takes the killed instance's tasks over once its session times out.
        "session.timeout.ms=10000", "heartbeat.interval.ms=1000",
        # Against a restarting broker: keep retrying rather than failing the task.
        "task.timeout.ms=300000", "retry.backoff.ms=200",
        # Transactions a second long: a kill finds records in an open one.
        "commit.interval.ms=1000",
        "replication.factor=-1")
    return peers.JavaProcess(f"Kafka Streams {version} instance {log_path.stem}", command, log_path).start()


def feed(bootstrap: str, app: str, part, halfway) -> None:
    """Produces `part` in ten batches, 0.2 s apart, calling `halfway()` after the fifth."""
    size = -(-len(part) // 10)
    for n, start in enumerate(range(0, len(part), size)):
        produce(bootstrap, [(f"{app}-in", p, e, f"{u},{a}", ts) for e, u, a, ts, p in part[start:start + size]])
        if n == 4:
            halfway()
        time.sleep(0.2)


def wait_running(instance: peers.JavaProcess, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while "-> RUNNING" not in instance.output():
        if not instance.is_running() or time.monotonic() > deadline:
            pytest.fail(f"{instance.name} did not reach RUNNING\n{instance.log_report()}", pytrace=False)
        time.sleep(0.5)


def run_scenario(version: str, tmp_path, bootstrap: str, kill_broker, replication_factor: int = 1,
                 protocol: str = "classic") -> None:
    """The scenario on a running kafka-wire (one broker or a cluster); `kill_broker(app)` SIGKILLs a
    broker (and, single node, restarts it) while the application works through the second part.
    `protocol` is the application's group.protocol: classic (the default) or streams (KIP-1071: the
    broker assigns the tasks)."""
    app = f"eos-{version.replace('.', '')}" + ("" if protocol == "classic" else f"-{protocol}")
    create_topics(bootstrap, {f"{app}-in": PARTITIONS, f"{app}-users": PARTITIONS,
                              **{f"{app}-{name}": PARTITIONS for name in OUTPUTS}}, replication_factor)
    base_ms = int(time.time() * 1000) - 600_000
    inputs = events(base_ms)
    # The table first, with older timestamps than any event: each join finds its user's region.
    produce(bootstrap, [(f"{app}-users", None, f"u{u}", region_of(f"u{u}"), base_ms - 60_000) for u in range(USERS)])
    parts = [inputs[: EVENTS // 3], inputs[EVENTS // 3: 2 * EVENTS // 3], inputs[2 * EVENTS // 3:]]
    produce(bootstrap, [(f"{app}-in", p, e, f"{u},{a}", ts) for e, u, a, ts, p in parts[0]])

    reader = TopicReader(bootstrap, {f"{app}-{name}": PARTITIONS for name in OUTPUTS})
    instances = [streams_instance(version, bootstrap, app, tmp_path / f"state-{n}", tmp_path / f"streams-{n}.log",
                                  protocol) for n in (1, 2)]
    reports = lambda: "\n".join(i.log_report() for i in instances)  # noqa: E731
    try:
        for instance in instances:
            wait_running(instance)
        enriched = f"{app}-enriched"
        reader.wait_for(lambda: reader.count(enriched) >= EVENTS // 6, "first output", 180, reports)
        # The second and third parts arrive in ten batches, 0.2 s apart, and a kill comes after the
        # fifth: the application is working through the part then, with records in open transactions
        # (commit.interval.ms=1000): the killed instance's is aborted when it times out; the ones open
        # at the broker kill are completed or aborted after the restart.
        feed(bootstrap, app, parts[1], halfway=instances[1].kill)
        reader.wait_for(lambda: reader.count(enriched) >= 2 * EVENTS // 3, "output after the instance was killed",
                        240, reports)
        feed(bootstrap, app, parts[2], halfway=lambda: kill_broker(app))
        reader.wait_for(lambda: all(reader.count(f"{app}-{name}") >= EVENTS for name in OUTPUTS),
                        "every event on every output", 300, reports)
        assert instances[0].is_running(), reports()
        instances[0].stop()  # a clean close: its last transaction commits, nothing stays open
        reader.read_to_end()
        expected = expected_outputs(inputs)
        for name in OUTPUTS:
            got = reader.by_key(f"{app}-{name}")
            assert got == expected[name], (
                f"{app}-{name} differs from the input's result: "
                f"{sum(map(len, got.values()))} records read, {EVENTS} expected; first differing keys: "
                f"{[k for k in sorted(set(got) | set(expected[name])) if got.get(k) != expected[name].get(k)][:3]}\n"
                f"{reports()}")
    finally:
        reader.close()
        for instance in instances:
            instance.kill()
    if protocol == "classic":
        reset_application(version, bootstrap, app)
    else:
        reset_streams_group(version, bootstrap, app)


def reset_application(version: str, bootstrap: str, app: str) -> None:
    """kafka-streams-application-reset: the group's input offsets back to the start, the application's
    repartition and changelog topics deleted."""
    internal = {t for t in topic_names(bootstrap) if t.startswith(f"{app}-") and
                t.endswith(("-changelog", "-repartition"))}
    assert {f"{app}-by-user-repartition", f"{app}-totals-store-changelog",
            f"{app}-windowed-store-changelog"} <= internal, internal
    try:
        install(version)
    except Exception as error:  # noqa: BLE001 (the reference Kafka's tools are a test dependency)
        missing_tool(f"Apache Kafka {version}'s tools ({error})")
    # The tool wants the application stopped: the killed instance's member may still be in the group
    # until its session times out (a restarted coordinator times every member out afresh). With
    # --force the tool removes members itself, but Kafka 3.9's Admin fails when the last one leaves
    # between its two looks at the group ("leaving members should not be empty").
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + 120
    while admin.describe_consumer_groups([app])[app].result(timeout=30).members:
        assert time.monotonic() < deadline, f"group {app} still has members 120 s after the application stopped"
        time.sleep(1)
    done = run_tool(version, peers.STREAMS_RESETTER, "--bootstrap-server", bootstrap, "--application-id", app,
                    "--input-topics", f"{app}-in", "--force")
    assert done.returncode == 0, f"StreamsResetter failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
    assert "Done." in done.stdout, done.stdout
    left = {t for t in topic_names(bootstrap) if t in internal}
    assert not left, f"internal topics not deleted by the reset: {left}"
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": app})
    try:
        committed = consumer.committed([TopicPartition(f"{app}-in", p) for p in range(PARTITIONS)], timeout=30)
    finally:
        consumer.close()
    assert [tp.offset for tp in committed] == [0] * PARTITIONS, committed


# The streams protocol's session timeout is the group's (group.streams.session.timeout.ms), not the
# application's session.timeout.ms: 10 s here as well, so the survivor takes over as soon.
STREAMS_GROUP_CONFIG = {"group.streams.min.session.timeout.ms": 10000, "group.streams.session.timeout.ms": 10000,
                        "group.streams.min.heartbeat.interval.ms": 1000, "group.streams.heartbeat.interval.ms": 1000}


def reset_streams_group(version: str, bootstrap: str, app: str) -> None:
    """The streams protocol's reset (KIP-1071): kafka-streams-groups --reset-offsets --to-earliest of
    the input topic with --delete-all-internal-topics, once the group is empty (the killed
    instance's member leaves when its session times out)."""
    from testing.streams_groups import streams_group_members

    internal = {t for t in topic_names(bootstrap) if t.startswith(f"{app}-") and
                t.endswith(("-changelog", "-repartition"))}
    assert {f"{app}-by-user-repartition", f"{app}-totals-store-changelog",
            f"{app}-windowed-store-changelog"} <= internal, internal
    deadline = time.monotonic() + 120
    while (members := streams_group_members(bootstrap, app)) != []:
        assert time.monotonic() < deadline, f"group {app} still has members 120 s after the application stopped: " \
                                            f"{members}"
        time.sleep(1)
    done = run_tool(version, "org.apache.kafka.tools.streams.StreamsGroupCommand", "--bootstrap-server", bootstrap,
                    "--group", app, "--reset-offsets", "--to-earliest", "--input-topic", f"{app}-in",
                    "--delete-all-internal-topics", "--execute")
    assert done.returncode == 0, f"kafka-streams-groups failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
    left = {t for t in topic_names(bootstrap) if t in internal}
    assert not left, f"internal topics not deleted by the reset: {left}\n{done.stdout}"
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": app})
    try:
        committed = consumer.committed([TopicPartition(f"{app}-in", p) for p in range(PARTITIONS)], timeout=30)
    finally:
        consumer.close()
    assert [tp.offset for tp in committed] == [0] * PARTITIONS, committed


@pytest.mark.parametrize("version,protocol,workers", [
    (KAFKA_4, "classic", 1),
    # The streams groups live with the other group coordinators, at worker 0; the application's
    # partitions are spread over both workers. This runs every streams-group code path the
    # one-process form runs, plus the hand-over between workers: the one-process form is KW_SLOW=1.
    pytest.param(KAFKA_4, "streams", 1, marks=pytest.mark.skipif(
        not SLOW, reason="streams protocol, one worker process (two workers run in CI): KW_SLOW=1")),
    (KAFKA_4, "streams", 2),
    pytest.param(KAFKA_3, "classic", 1, marks=pytest.mark.skipif(not SLOW, reason="Kafka Streams 3.9: KW_SLOW=1"))])
def test_streams_exactly_once_survives_instance_and_broker_kills(version, protocol, workers, tmp_path):
    require_peers(version)
    config = {"group.initial.rebalance.delay.ms": 0, "num.worker.processes": workers,
              **(STREAMS_GROUP_CONFIG if protocol == "streams" else {})}
    broker = BrokerProcess(tmp_path / "broker", config=config, startup_timeout=60)
    broker.start()

    def kill_and_restart(app):
        broker.kill()
        broker.start()

    try:
        run_scenario(version, tmp_path, broker.bootstrap, kill_and_restart, protocol=protocol)
    except BaseException as error:
        error.add_note(broker.log_report())
        raise
    finally:
        problems = broker.finish()
    assert not problems, problems


@pytest.mark.skipif(not SLOW, reason="the 3-broker cluster variant: KW_SLOW=1")
@pytest.mark.parametrize("protocol", ["classic", "streams"])
def test_streams_exactly_once_on_a_cluster_survives_the_changelog_leader_kill(protocol, tmp_path, zookeeper_installed):
    """RF=3 everywhere (inputs, outputs, the application's changelog and repartition topics, the
    offsets and transaction state topics); the broker leading the changelog partitions of the plain
    aggregation's store is SIGKILLed mid-run and started again once every event is processed."""
    from testing.cluster import running_cluster

    require_peers(KAFKA_4)
    killed: list[int] = []
    with running_cluster(3, config={"transaction.state.log.replication.factor": 3,
                                    "transaction.state.log.min.isr": 2, "min.insync.replicas": 2,
                                    **(STREAMS_GROUP_CONFIG if protocol == "streams" else {})},
                         tmp_dir=tmp_path / "cluster") as cluster:

        def kill_changelog_leader(app):
            changelog = f"{app}-totals-store-changelog"
            leaders = [cluster.leader_of(changelog, p) for p in range(PARTITIONS)]
            leader = max(set(leaders), key=leaders.count)
            assert leader > 0, leaders
            cluster.brokers[leader].kill()
            killed.append(leader)

        run_scenario(KAFKA_4, tmp_path, cluster.bootstrap, kill_changelog_leader, replication_factor=3,
                     protocol=protocol)
        assert killed
        cluster.brokers[killed[0]].start()
        cluster.wait_for_brokers(set(cluster.brokers), timeout=60)


@pytest.mark.skipif(not SLOW, reason="the application on the reference Kafka: KW_SLOW=1")
def test_streams_protocol_exactly_once_on_the_reference_kafka(tmp_path):
    """The same application and scenario with group.protocol=streams against Apache Kafka 4.3.0
    itself (its own broker, SIGKILLed and restarted alike, the same group.streams.* settings): the
    application, not kafka-wire, is what this checks, so that the kafka-wire run above compares
    with what Kafka does."""
    from compat.reference_kafka import ReferenceKafka, ReferenceKafkaUnavailable

    require_peers(KAFKA_4)
    try:
        install(KAFKA_4)
    except ReferenceKafkaUnavailable as error:
        missing_tool(f"Apache Kafka {KAFKA_4} ({error})")
    kafka = ReferenceKafka(KAFKA_4, tmp_path / "kafka", config=STREAMS_GROUP_CONFIG)
    kafka.start()

    def kill_and_restart(app):
        kafka.kill()
        kafka.start()

    try:
        run_scenario(KAFKA_4, tmp_path, kafka.bootstrap, kill_and_restart, protocol="streams")
    except BaseException as error:
        error.add_note(kafka.log_report())
        raise
    finally:
        kafka.stop()
