"""Feature flags (KIP-584) against a broker process: ApiVersions' features, UpdateFeatures, and
Kafka 4.3.0's own kafka-features.sh (org.apache.kafka.tools.FeatureCommand, Admin.describeFeatures
and Admin.updateFeatures) driving them.
"""

from __future__ import annotations

import json
import re
import subprocess
import uuid

import pytest

from testing.broker_process import BrokerProcess
from client import WireClient
from compat.reference_kafka import KAFKA_4, ReferenceKafkaUnavailable, install
from compat.tool_compare import ToolSession
from kafka_wire.errors import ErrorCode
from tests.conftest import missing_tool

pytestmark = pytest.mark.timeout(300)

FEATURE_COMMAND = "org.apache.kafka.tools.FeatureCommand"
SOFTWARE = {"client_software_name": "kafka-wire-tests", "client_software_version": "1"}


@pytest.fixture(scope="module")
def kafka_features():
    """Runs Kafka 4.3.0's kafka-features.sh: (bootstrap, *args) -> CompletedProcess. The runs share one
    JVM (compat/tool_compare.py's ToolSession: FeatureCommand's main with Exit's procedures caught, its
    output captured), so the module pays one JVM start instead of one a run."""
    try:
        install(KAFKA_4)
    except ReferenceKafkaUnavailable as error:
        missing_tool(f"Apache Kafka {KAFKA_4}'s tools ({error})")

    with ToolSession(KAFKA_4) as session:
        def run(bootstrap: str, *args: str) -> subprocess.CompletedProcess:
            command = ["kafka-features.sh", "--bootstrap-server", bootstrap, *args]
            done = session.run(FEATURE_COMMAND, *command[1:], timeout=120)
            return subprocess.CompletedProcess(command, done.exit, done.stdout, done.stderr)

        yield run


@pytest.fixture
def feature_broker(tmp_path):
    broker = BrokerProcess(tmp_path / "broker")
    broker.start()
    yield broker
    problems = broker.finish()
    assert not problems, "\n".join(problems) + broker.log_report()


def features(bootstrap: str, version: int | None = None):
    with WireClient(bootstrap) as client:
        version = version if version is not None else client.negotiate()[18][1]
        response = client.call("ApiVersions", version, SOFTWARE)
    return ({f.name: (f.min_version, f.max_version) for f in response.supported_features},
            {f.name: f.max_version_level for f in response.finalized_features}, response.finalized_features_epoch)


def described(output: str) -> dict[str, tuple[str, str, str, str]]:
    """kafka-features.sh describe's lines: feature -> (supported min, max, finalized level, epoch)."""
    rows = {}
    for line in output.splitlines():
        match = re.match(r"Feature: (\S+)\s+SupportedMinVersion: (\S+)\s+SupportedMaxVersion: (\S+)\s+"
                         r"FinalizedVersionLevel: (\S+)\s+Epoch: (\S+)", line)
        if match:
            rows[match[1]] = match.groups()[1:]
    return rows


def update(bootstrap: str, version: int, feature: str, level: int, upgrade_type: int, validate_only=False):
    with WireClient(bootstrap) as client:
        return client.call("UpdateFeatures", version, {"timeout_ms": 30000, "validate_only": validate_only,
                                                       "feature_updates": [{"feature": feature, "max_version_level": level,
                                                                            "upgrade_type": upgrade_type,
                                                                            "allow_downgrade": upgrade_type != 1}]})


def api_versions_max(bootstrap: str) -> int:
    with WireClient(bootstrap) as client:
        return client.negotiate()[18][1]


def test_api_versions_carries_supported_and_finalized_features(feature_broker):
    bootstrap = feature_broker.bootstrap
    # At v3 the features whose minimum is 0 (all of ours) are left out, as Kafka does (KAFKA-17011).
    supported, finalized, epoch = features(bootstrap, 3)
    assert supported == {} and epoch == 0
    tv_max = finalized["transaction.version"]
    assert finalized == {"transaction.version": tv_max, "group.version": 1, "share.version": 1, "streams.version": 1} and tv_max >= 1
    if api_versions_max(bootstrap) >= 4:
        supported, finalized_v4, epoch = features(bootstrap, 4)
        assert supported == {"transaction.version": (0, tv_max), "group.version": (0, 1), "share.version": (0, 1),
                             "streams.version": (0, 1)}
        assert finalized_v4 == finalized and epoch == 0


def test_kafka_features_tool_describes_downgrades_and_upgrades(feature_broker, kafka_features):
    bootstrap = feature_broker.bootstrap
    tv_max = str(features(bootstrap)[1]["transaction.version"])
    # Admin.describeFeatures reads ApiVersions at the highest version both sides know; below v4 it
    # sees no supported feature (all start at 0) and kafka-features.sh lists none, as with Kafka.
    rows = {"group.version": ("0", "1", "1", "0"), "share.version": ("0", "1", "1", "0"),
            "streams.version": ("0", "1", "1", "0"),
            "transaction.version": ("0", tv_max, tv_max, "0")}
    done = kafka_features(bootstrap, "describe")
    assert done.returncode == 0, done.stderr
    assert described(done.stdout) == (rows if api_versions_max(bootstrap) >= 4 else {}), done.stdout

    done = kafka_features(bootstrap, "upgrade", "--feature", "transaction.version=3", "--dry-run")
    assert done.returncode == 1
    assert ("Can not upgrade transaction.version to 3. The update failed for all features since the following "
            "feature had an error: Invalid update version 3 for feature transaction.version. Local controller 1 "
            f"only supports versions 0-{tv_max}") in done.stdout + done.stderr

    done = kafka_features(bootstrap, "downgrade", "--feature", "transaction.version=0", "--dry-run")
    assert done.returncode == 0 and "transaction.version can be downgraded to 0." in done.stdout
    assert features(bootstrap)[1:] == ({"transaction.version": int(tv_max), "group.version": 1, "share.version": 1, "streams.version": 1}, 0)

    done = kafka_features(bootstrap, "disable", "--feature", "group.version")
    assert done.returncode == 0 and "group.version was disabled." in done.stdout, done.stdout + done.stderr
    assert features(bootstrap)[1:] == ({"transaction.version": int(tv_max), "share.version": 1, "streams.version": 1}, 1)
    # group.version 0 turns KIP-848 consumer groups off, as in Kafka.
    with WireClient(bootstrap) as client:
        heartbeat = client.call("ConsumerGroupHeartbeat", 0, {
            "group_id": "g", "member_id": "", "member_epoch": 0, "rebalance_timeout_ms": 30000,
            "subscribed_topic_names": ["t"], "topic_partitions": []})
    assert heartbeat.error_code == ErrorCode.UNSUPPORTED_VERSION

    done = kafka_features(bootstrap, "upgrade", "--metadata", "4.0-IV3", "--dry-run")
    assert done.returncode == 1
    assert "Invalid update version 25 for feature metadata.version. Local controller 1 does not support this " \
           "feature." in done.stdout + done.stderr

    # Finalized levels and their epoch survive a restart.
    feature_broker.restart()
    assert features(bootstrap)[1:] == ({"transaction.version": int(tv_max), "share.version": 1, "streams.version": 1}, 1)
    done = kafka_features(bootstrap, "upgrade", "--feature", "group.version=1")
    assert done.returncode == 0 and "group.version was upgraded to 1." in done.stdout, done.stdout + done.stderr
    if api_versions_max(bootstrap) >= 4:
        assert described(kafka_features(bootstrap, "describe").stdout)["group.version"] == ("0", "1", "1", "2")
    assert features(bootstrap)[1:] == ({"transaction.version": int(tv_max), "group.version": 1, "share.version": 1, "streams.version": 1}, 2)
    # share.version 0 turns KIP-932 share groups off, as in Kafka.
    done = kafka_features(bootstrap, "disable", "--feature", "share.version")
    assert done.returncode == 0 and "share.version was disabled." in done.stdout, done.stdout + done.stderr
    with WireClient(bootstrap) as client:
        heartbeat = client.call("ShareGroupHeartbeat", 1, {
            "group_id": "g", "member_id": "m" * 22, "member_epoch": 0, "subscribed_topic_names": ["t"]})
    assert heartbeat.error_code == ErrorCode.UNSUPPORTED_VERSION


@pytest.mark.parametrize("version", [0, 1, 2])
def test_update_features_versions(feature_broker, version):
    bootstrap = feature_broker.bootstrap
    lower = features(bootstrap)[1]["transaction.version"] - 1
    refused = update(bootstrap, version, "transaction.version", lower, 1)
    assert refused.error_code == ErrorCode.INVALID_UPDATE_VERSION and refused.results == []
    assert refused.error_message == (
        "The update failed for all features since the following feature had an error: Invalid update version "
        f"{lower} for feature transaction.version. Can't downgrade the version of this feature without setting "
        "the upgrade type to either safe or unsafe downgrade.")
    accepted = update(bootstrap, version, "transaction.version", lower, 2, validate_only=True)
    assert (accepted.error_code, accepted.error_message) == (0, None)
    # v0-1 answer a result per feature (Kafka's message there is Errors.NONE.message(), "NONE").
    assert [(r.feature, r.error_code, r.error_message) for r in accepted.results] == \
        ([("transaction.version", 0, "NONE")] if version < 2 else [])
    # v0 has no validate_only: the downgrade happened, and the epoch moved.
    _, finalized, epoch = features(bootstrap)
    assert (finalized.get("transaction.version", 0), epoch) == ((lower, 1) if version == 0 else (lower + 1, 0))


# == cluster mode: /feature in ZooKeeper ==========================================================

def test_cluster_keeps_features_in_zookeeper(zookeeper_installed, tmp_path, kafka_features):
    from kazoo.client import KazooClient

    from testing.cluster import running_cluster

    with running_cluster(2, tmp_dir=tmp_path) as cluster:
        bootstrap = {node_id: b.bootstrap for node_id, b in cluster.brokers.items()}
        controller = cluster.wait_for(lambda: next(iter(
            {cluster.metadata(via=n).controller_id for n in bootstrap} - {-1}), None), what="a controller")
        other = next(n for n in bootstrap if n != controller)
        finalized = {n: features(b)[1:] for n, b in bootstrap.items()}
        assert finalized[controller] == finalized[other] and finalized[other][1] == 0
        tv = finalized[other][0]["transaction.version"]

        # Kafka's ZooKeeper mode: only the controller changes features.
        refused = update(bootstrap[other], 1, "group.version", 0, 2)
        assert refused.error_code == ErrorCode.NOT_CONTROLLER
        # kafka-features.sh (Admin) finds the controller through Metadata.
        done = kafka_features(bootstrap[other], "disable", "--feature", "group.version")
        assert done.returncode == 0 and "group.version was disabled." in done.stdout, done.stdout + done.stderr
        for node_id in bootstrap:
            cluster.wait_for(lambda n=node_id: features(bootstrap[n])[1:] == (
                                 {"transaction.version": tv, "share.version": 1, "streams.version": 1}, 1),
                             what=f"broker {node_id} to see group.version disabled")

        zk = KazooClient(hosts=cluster.zookeeper.connect)
        zk.start(timeout=15)
        try:
            data, stat = zk.get("/feature")
        finally:
            zk.stop()
            zk.close()
        assert stat.version == 1
        assert json.loads(data) == {"version": 2, "status": 1,
                                    "features": {"share.version": {"max_version_level": 1},
                                                 "streams.version": {"max_version_level": 1},
                                                 "transaction.version": {"max_version_level": tv}}}

        cluster.brokers[other].restart()
        assert features(bootstrap[other])[1:] == ({"transaction.version": tv, "share.version": 1, "streams.version": 1}, 1)


# == transaction.version drives the Java client's transaction protocol ============================

def test_java_4_3_follows_the_finalized_transaction_version(tmp_path, java_kafka_clients):
    from test_transactions import JAVA_SOURCE, Produced, java_produce, java_read_both, requests_by_version, \
        versions_of

    from testing.broker_process import free_port

    command = java_kafka_clients("4.3.0").program(JAVA_SOURCE)
    port = free_port()
    broker = BrokerProcess(tmp_path / "broker", config={"metrics.port": port})
    broker.start()
    try:
        bootstrap = broker.bootstrap
        for level, upgrade_type in ((1, 2), (2, 1)):
            assert update(bootstrap, 2, "transaction.version", level, upgrade_type).error_code == 0
            before = requests_by_version(port)
            topic = f"tv{level}-{uuid.uuid4().hex[:8]}"
            produced: Produced = java_produce(command, bootstrap, topic)
            made = requests_by_version(port) - before
            if level == 1:
                assert versions_of(made, "AddPartitionsToTxn") and max(versions_of(made, "EndTxn")) == 4, made
                assert max(versions_of(made, "Produce")) <= 11, made
            else:
                assert not versions_of(made, "AddPartitionsToTxn") and set(versions_of(made, "EndTxn")) == {5}, made
            read = java_read_both(command, bootstrap, topic)
            assert sorted(read["read_committed"]) == sorted(produced.committed) and len(produced.aborted) == 10
            assert sorted(read["read_uncommitted"]) == sorted(produced.committed + produced.aborted)
    finally:
        problems = broker.finish()
    assert not problems, "\n".join(problems) + broker.log_report()


# == kafka-wire features: kafka-features.sh in Python ===========================================

def kafka_wire_features(bootstrap: str, *args: str):
    import sys

    return subprocess.run([sys.executable, "-m", "cli", "features", args[0], "--bootstrap-server", bootstrap,
                           *args[1:]], capture_output=True, text=True, timeout=60)


def test_kafka_wire_features_prints_what_kafka_features_prints(feature_broker, kafka_features):
    bootstrap = feature_broker.bootstrap
    for args in (["describe"], ["upgrade", "--feature", "transaction.version=3", "--dry-run"],
                 ["downgrade", "--feature", "transaction.version=1", "--dry-run"],
                 ["disable", "--feature", "group.version"], ["describe"],
                 ["upgrade", "--feature", "group.version=1"], ["describe"]):
        ours = kafka_wire_features(bootstrap, *args)
        kafkas = kafka_features(bootstrap, *args)
        # Kafka's tool prints a failure's summary line on stderr; ours as "Error: ...".
        assert (ours.returncode, ours.stdout) == (kafkas.returncode, kafkas.stdout), (args, ours, kafkas)
        if kafkas.returncode:
            assert ours.stderr.strip() == f"Error: {kafkas.stderr.strip()}"
    assert features(bootstrap)[1:] == ({"transaction.version": 2, "group.version": 1, "share.version": 1, "streams.version": 1}, 2)
