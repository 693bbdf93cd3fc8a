"""The requests real clients send, captured for replay against both brokers (issue 26, item 5).

`kafka-wire compat capture` starts a kafka-wire broker behind a recording CountingProxy
(compat/traffic.py), runs the client programs the compatibility suite already runs (compat/clients.py:
kafka-python, aiokafka, confluent-kafka plain and idempotent, kcat, kafkajs, Java kafka-clients 4.3.0's
ClientCheck), group, transaction and admin flows of kafka-python, confluent-kafka, aiokafka and kcat,
franz-go's and librdkafka's own tests (a few, FRANZ_GO_TESTS and LIBRDKAFKA_TESTS) and Kafka's tools, decodes every request frame they sent with kafka_wire's own decoders, and
writes compat/conformance/captured/requests.json: one entry per distinct (client, API, version, request
shape), the shape being the body's field structure with values left out.

What varies between runs is marked so the replay (scenarios/client_replay.py) substitutes its own:
topic names, group ids and transactional ids become `${topic:N}`, `${group:N}`, `${txn:N}` (numbered in
order of first appearance in the corpus); member ids `${member}`; fetch session ids and epochs are reset
to a sessionless full fetch (`${session}`). A request that cannot stand alone is kept with a `skip` reason
(SASL exchanges). An idempotent producer's batch is marked `idempotent`: the replay asks for a producer id
of its own first and writes it into the batch; a transactional one is marked `transactional` too: the
replay also begins the transaction (AddPartitionsToTxn) before it and aborts it after.
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path

from kafka_wire.headers import decode_request_header
from kafka_wire.messages import APIS
from kafka_wire.primitives import DecodeError

from .scenario import plain

CORPUS = Path(__file__).resolve().parent / "captured" / "requests.json"
PER_API_VERSION_CLIENT = 4  # shapes kept at most per (client, API, version): the corpus stays small

# Fields whose string value names a topic / a group / a transactional id, wherever they appear.
TOPIC_FIELDS = {"topic", "topic_name"}
TOPIC_LIST_PARENTS = {"topics", "topic_data", "topic_names", "tx_topics", "partitions_to_delete", "v3_and_below_topics"}
GROUP_FIELDS = {"group_id", "group_instance_id_group"}
GROUP_LIST_FIELDS = {"groups", "group_ids", "groups_names"}
TXN_FIELDS = {"transactional_id", "v3_and_below_transactional_id"}
MEMBER_FIELDS = {"member_id", "leader"}
INTERNAL = ("__consumer_offsets", "__transaction_state")


class Names:
    """The per-run names met in the capture and their placeholders."""

    def __init__(self, topic_ids: dict[str, str] | None = None):
        self.topic_ids = topic_ids or {}  # topic id (as str) -> its name, from the answers the proxy saw
        self.placeholders: dict[tuple[str, str], str] = {}
        self.partitions: dict[str, int] = {}  # topic placeholder -> partitions the corpus names

    def mark(self, kind: str, value):
        if not isinstance(value, str) or not value or value.startswith(INTERNAL):
            return value
        key = (kind, value)
        if key not in self.placeholders:
            count = sum(1 for k in self.placeholders if k[0] == kind)
            self.placeholders[key] = f"${{{kind}:{count}}}"
        return self.placeholders[key]


def _partition_indexes(item: dict) -> list[int]:
    found = []
    for key in ("partitions", "partition_data", "partition_indexes", "partition_index"):
        value = item.get(key)
        if isinstance(value, list):
            for p in value:
                if isinstance(p, int):
                    found.append(p)
                elif isinstance(p, dict):
                    for k in ("partition_index", "partition", "index"):
                        if isinstance(p.get(k), int):
                            found.append(p[k])
    return found


def generalise(api: str, body, names: Names):
    """The body with its run-specific values replaced by placeholders."""

    def walk(value, key: str | None, parent: str | None):
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                if k in TOPIC_FIELDS or (k == "name" and parent in TOPIC_LIST_PARENTS):
                    out[k] = names.mark("topic", v)
                    if isinstance(out[k], str) and out[k].startswith("${topic"):
                        indexes = _partition_indexes(value)
                        names.partitions[out[k]] = max([names.partitions.get(out[k], 1)] + [i + 1 for i in indexes])
                elif k in GROUP_FIELDS:
                    out[k] = names.mark("group", v)
                elif k in TXN_FIELDS:
                    out[k] = names.mark("txn", v)
                elif k in MEMBER_FIELDS and isinstance(v, str) and v:
                    out[k] = "${member}"
                elif k == "resource_name" and value.get("resource_type") == 2:
                    out[k] = names.mark("topic", v)
                elif k == "resource_name" and value.get("resource_type") == 3:
                    out[k] = names.mark("group", v)
                elif k == "key" and api == "FindCoordinator":
                    out[k] = names.mark("group" if value.get("key_type", 0) == 0 else "txn", v)
                elif k == "coordinator_keys" and api == "FindCoordinator":
                    kind = "group" if value.get("key_type", 0) == 0 else "txn"
                    out[k] = [names.mark(kind, x) for x in v]
                elif k in GROUP_LIST_FIELDS and isinstance(v, list) and all(isinstance(x, str) for x in v):
                    out[k] = [names.mark("group", x) for x in v]
                elif k in ("session_id", "session_epoch") and api == "Fetch":
                    out[k] = "${session}"
                else:
                    out[k] = walk(v, k, k)
            named = out.get("topic_id")
            if isinstance(named, str) and named.startswith("${topic_id:"):  # partitions of a topic named by id
                topic = named.replace("${topic_id:", "${topic:")
                names.partitions[topic] = max([names.partitions.get(topic, 1)] +
                                              [i + 1 for i in _partition_indexes(value)])
            return out
        if isinstance(value, str) and value.startswith("UUID('"):
            uuid = value[6:-2]
            if uuid == "00000000-0000-0000-0000-000000000000":
                return "${uuid:zero}"
            name = names.topic_ids.get(uuid)
            if name is None:
                return "${uuid:unknown}"  # an id no answer named: replayed as an id neither broker has
            return names.mark("topic", name).replace("${topic:", "${topic_id:")
        if isinstance(value, list):
            if key in ("topic_names", "subscribed_topic_names") and all(isinstance(x, str) for x in value):
                return [names.mark("topic", x) for x in value]
            return [walk(v, key, parent) for v in value]
        return value

    return walk(body, None, None)


def shape(value):
    """The field structure of a body: keys and kinds, values left out (lists by their items' shapes)."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()} if "bytes" not in value else "bytes"
    if isinstance(value, list):
        shapes = []
        for item in value:
            s = shape(item)
            if s not in shapes:
                shapes.append(s)
        return shapes
    if value is None:
        return None
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "neg" if value < 0 else "int"  # -1 (none/latest) and a value are different requests
    return type(value).__name__


def _producer_batches(body) -> list[bytes]:
    return [bytes.fromhex(partition["records"]["bytes"])
            for topic in body.get("topic_data", []) for partition in topic.get("partition_data", [])
            if isinstance(partition.get("records"), dict) and "bytes" in partition["records"]]


def skip_reason(api: str, body) -> str | None:
    if api in ("SaslHandshake", "SaslAuthenticate"):
        return "a SASL exchange belongs to its connection's login, not to a standalone replay"
    if api == "Produce" and transactional(api, body) and not body.get("transactional_id"):
        return "a transactional batch in a Produce that names no transactional id: no transaction to begin for it"
    return None


def transactional(api: str, body) -> bool:
    """A Produce of a transactional producer (attributes bit 4 in its batches): the replay begins a
    transaction of its own for it (InitProducerId, AddPartitionsToTxn) and aborts it afterwards."""
    return api == "Produce" and any(len(raw) >= 23 and int.from_bytes(raw[21:23], "big") & 0x10
                                    for raw in _producer_batches(body))


def idempotent(api: str, body) -> bool:
    """A Produce of an idempotent producer (a producer id in its batches)."""
    return api == "Produce" and any(len(raw) >= 51 and int.from_bytes(raw[43:51], "big", signed=True) >= 0
                                    for raw in _producer_batches(body))


def decode(frame: bytes):
    """(api name, version, body as plain data), or None for a frame we cannot decode."""
    try:
        api_key = int.from_bytes(frame[0:2], "big", signed=True)
        version = int.from_bytes(frame[2:4], "big", signed=True)
        api = APIS.get(api_key)
        if api is None:
            return None
        _, pos = decode_request_header(frame, api.is_flexible(version))
        body = api.request.decode(frame, version, pos, exact=False)
    except (DecodeError, ValueError, KeyError, IndexError):
        return None
    return api.name, version, plain(body)


def build_corpus(captured: list[tuple[str, str, int, int, bytes]], topic_ids: dict[str, str] | None = None) -> dict:
    """captured: (program, client id, api key, version, frame) in arrival order."""
    names = Names(topic_ids)
    entries, seen, per_key, total = [], set(), {}, 0
    for program, client_id, _key, _version, frame in captured:
        decoded = decode(frame)
        if decoded is None:
            continue
        total += 1
        api, version, body = decoded
        general = generalise(api, body, names)
        signature = json.dumps([program, api, version, shape(general)], sort_keys=True)
        if signature in seen:
            continue
        seen.add(signature)
        key = (program, api, version)
        if per_key.get(key, 0) >= PER_API_VERSION_CLIENT:
            continue
        per_key[key] = per_key.get(key, 0) + 1
        entry = {"client": program, "client_id": client_id, "api": api, "version": version, "body": general}
        if idempotent(api, body):
            entry["idempotent"] = True
        if transactional(api, body):
            entry["transactional"] = True
        reason = skip_reason(api, body)
        if reason:
            entry["skip"] = reason
        entries.append(entry)
    return {"requests_seen": total, "topics": {p: n for p, n in sorted(names.partitions.items())},
            "entries": entries}


def _programs():
    from .. import clients

    java = clients.JavaPrograms()
    wanted = {"kafka_python_check.py", "aiokafka_check.py", "confluent_check.py", "confluent_check.py --idempotent",
              "kcat_check.py", "ClientCheck (kafka-clients 4.3.0)", "check.js"}
    return java, [run for run in clients.client_runs(java) if run.label in wanted]


def _group_flows(bootstrap: str, say) -> list[tuple[str, callable]]:
    """Consumer-group and admin flows the acceptance programs do not reach: a subscribed consumer that
    commits and leaves (kafka-python: classic protocol; confluent-kafka: classic and KIP-848's consumer
    protocol), and confluent-kafka's AdminClient on groups, configs and ACL-free describes."""

    def kafka_python() -> None:
        from kafka import KafkaConsumer, KafkaProducer
        from kafka.admin import KafkaAdminClient, NewPartitions, ConfigResource, ConfigResourceType

        topic, group = "capture-kp-topic", "capture-kp-group"
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="capture-kafka-python")
        with contextlib.suppress(Exception):
            admin.create_topics([__import__("kafka.admin", fromlist=["NewTopic"]).NewTopic(topic, 2, 1)])
        producer = KafkaProducer(bootstrap_servers=bootstrap, client_id="capture-kafka-python")
        for i in range(4):
            producer.send(topic, key=b"k%d" % i, value=b"v%d" % i)
        producer.flush(30)
        producer.close()
        consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, client_id="capture-kafka-python",
                                 auto_offset_reset="earliest", enable_auto_commit=False)
        deadline = time.monotonic() + 30
        got = 0
        while got < 4 and time.monotonic() < deadline:
            got += sum(len(v) for v in consumer.poll(timeout_ms=500).values())
        consumer.commit()
        consumer.close()
        for call in (lambda: admin.describe_groups([group]), admin.list_groups,
                     lambda: admin.list_group_offsets(group),
                     lambda: admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)]),
                     lambda: admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                                                 configs={"retention.ms": "86400000"})]),
                     lambda: admin.create_partitions({topic: NewPartitions(3)}),
                     admin.describe_cluster, admin.describe_features, admin.describe_log_dirs,
                     admin.list_transactions, admin.describe_user_scram_credentials,
                     lambda: admin.describe_producers([__import__("kafka").TopicPartition(topic, 0)]),
                     lambda: admin.delete_groups([group]), lambda: admin.delete_topics([topic])):
            try:
                call()
            except Exception as error:  # what it sent is captured all the same
                say(f"    kafka-python admin: {type(error).__name__}: {str(error)[:150]}")
        admin.close()

    def confluent(protocol: str):
        def flow() -> None:
            from confluent_kafka import Consumer, Producer
            from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

            topic, group = f"capture-ck-{protocol}-topic", f"capture-ck-{protocol}-group"
            common = {"bootstrap.servers": bootstrap, "client.id": f"capture-confluent-{protocol}"}
            admin = AdminClient(common)
            for future in admin.create_topics([NewTopic(topic, 2, 1)]).values():
                future.result(30)
            time.sleep(1)
            producer = Producer(common)
            for i in range(4):
                producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i)
            producer.flush(30)
            config = {**common, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False}
            if protocol == "consumer":
                config["group.protocol"] = "consumer"
            consumer = Consumer(config)
            consumer.subscribe([topic])
            deadline, got = time.monotonic() + 20, 0
            while got < 4 and time.monotonic() < deadline:
                message = consumer.poll(0.5)
                if message is not None and not message.error():
                    got += 1
            if got:
                consumer.commit(asynchronous=False)
            consumer.close()
            for future in admin.describe_consumer_groups([group]).values():
                future.result(30)
            admin.list_consumer_groups().result(30)
            from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
            for future in admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)]).values():
                future.result(30)
            for future in admin.describe_configs([ConfigResource("topic", topic)]).values():
                future.result(30)
            admin.describe_cluster().result(30)
            for future in admin.describe_topics(__import__("confluent_kafka").TopicCollection([topic])).values():
                future.result(30)
            from confluent_kafka.admin import OffsetSpec
            for future in admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.latest()}).values():
                future.result(30)
            for future in admin.delete_consumer_groups([group]).values():
                future.result(30)
            for future in admin.delete_topics([topic]).values():
                future.result(30)
        return flow

    def aiokafka() -> None:
        import asyncio

        from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
        from aiokafka.admin import AIOKafkaAdminClient, NewTopic
        from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

        topic, group, txn = "capture-aio-topic", "capture-aio-group", "capture-aio-txn"

        async def flow() -> None:
            admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id="capture-aiokafka")
            await admin.start()
            try:
                await admin.create_topics([NewTopic(topic, 2, 1)])
                producer = AIOKafkaProducer(bootstrap_servers=bootstrap, client_id="capture-aiokafka",
                                            enable_idempotence=True)
                await producer.start()
                for i in range(4):
                    await producer.send_and_wait(topic, key=b"k%d" % i, value=b"v%d" % i)
                await producer.stop()
                producer = AIOKafkaProducer(bootstrap_servers=bootstrap, client_id="capture-aiokafka",
                                            transactional_id=txn)
                await producer.start()
                async with producer.transaction():
                    for i in range(2):
                        await producer.send_and_wait(topic, key=b"t%d" % i, value=b"t%d" % i, partition=i)
                await producer.stop()
                consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                                            client_id="capture-aiokafka", auto_offset_reset="earliest",
                                            enable_auto_commit=False, isolation_level="read_committed")
                await consumer.start()
                got, deadline = 0, time.monotonic() + 30
                while got < 6 and time.monotonic() < deadline:
                    got += sum(len(v) for v in (await consumer.getmany(timeout_ms=500)).values())
                await consumer.commit()
                await consumer.stop()
                for call in (lambda: admin.describe_consumer_groups([group]), admin.list_consumer_groups,
                             lambda: admin.list_consumer_group_offsets(group),
                             lambda: admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)]),
                             admin.describe_cluster,
                             lambda: admin.delete_topics([topic])):
                    try:
                        await call()
                    except Exception as error:  # what it sent is captured all the same
                        say(f"    aiokafka admin: {type(error).__name__}: {str(error)[:150]}")
            finally:
                await admin.close()

        asyncio.run(flow())

    def kcat() -> None:
        import shutil
        import subprocess

        binary = shutil.which("kcat")
        if binary is None:
            raise RuntimeError("kcat is not installed")
        topic, group = "capture-kcat-topic", "capture-kcat-group"
        common = [binary, "-b", bootstrap, "-X", "client.id=capture-kcat"]

        def kcat_run(*args, stdin=None):
            subprocess.run([*common, *args], input=stdin, capture_output=True, text=True, timeout=60, check=True)

        kcat_run("-P", "-t", topic, "-K:", "-X", "enable.idempotence=true", stdin="k1:one\nk2:two\nk3:three\n")
        kcat_run("-L", "-t", topic)
        # A balanced consumer (-G): joins the group, consumes, commits, leaves.
        kcat_run("-G", group, "-X", "auto.offset.reset=earliest", "-c", "3", "-e", topic)
        kcat_run("-Q", "-t", f"{topic}:0:-1")

    return [("kafka-python", kafka_python), ("confluent-kafka", confluent("classic")),
            ("confluent-kafka consumer-protocol", confluent("consumer")), ("aiokafka", aiokafka), ("kcat", kcat)]


# franz-go's own kgo integration tests (compat/franz_go_suite.py's binary): groups (classic and, after a
# test whose admin request enables it, KIP-848), transactions end to end, partitions added, regex subscriptions.
FRANZ_GO_TESTS = ("TestGroupSimple", "TestTxnEtl", "TestAddRemovePartitions", "Test848RegexBrokerResolves",
                  "TestUnknownGroupOffsetFetchPinned", "TestIssue325")
FRANZ_GO_RECORDS = 300  # records each ETL level moves: the requests, not the volume, are the point

# librdkafka's own test suite (compat/librdkafka_suite.py's build): groups listed and described, partitions
# added, idempotence, transactions (0055), configs, ACLs, commit metadata. 0092 and 0129 fail against a 4.x
# broker (message.format.version, segment.bytes=20000: compat/librdkafka-allowlist.txt) after sending what
# they send first, which is kept (the replay compares those answers with Kafka's).
LIBRDKAFKA_TESTS = ("0019_list_groups", "0044_partition_cnt", "0055_producer_latency", "0090_idempotence",
                    "0092_mixed_msgver", "0099_commit_metadata", "0109_auto_create_topics", "0129_fetch_aborted_msgs")


def _franz_go(bootstrap: str, scratch: Path, say) -> None:
    import subprocess

    from .. import franz_go_suite as suite

    binary = suite.find_binary()
    if binary is None:
        say("  franz-go: not run (no kgo.test: bash compat/setup-franz-go.sh)")
        return
    env = suite.environment(suite.Target("kafka-wire", bootstrap), suite.PLAIN, FRANZ_GO_RECORDS)
    pattern = "|".join(FRANZ_GO_TESTS)
    log = scratch / "franz-go.log"
    with open(log, "wb") as out:
        done = subprocess.run([str(binary), "-test.v", "-test.run", f"^({pattern})$", "-test.count", "1",
                               "-test.timeout", "300s"], cwd=suite.package_dir(), env=env, stdin=subprocess.DEVNULL,
                              stdout=out, stderr=subprocess.STDOUT, timeout=400, start_new_session=True)
    text = log.read_text(errors="replace")
    say(f"    franz-go kgo tests: exit {done.returncode}; "
        + ", ".join(line.strip() for line in text.splitlines() if line.startswith(("--- PASS", "--- FAIL", "--- SKIP"))))


def _librdkafka(bootstrap: str, scratch: Path, say) -> None:
    from .. import librdkafka_suite as suite

    build = suite.find_build()
    if build is None:
        say("  librdkafka tests: not run (no build: bash compat/setup-librdkafka.sh)")
        return
    wanted = [t for t in build.tests() if t.name in LIBRDKAFKA_TESTS]
    lane = suite.Lane("default", bootstrap, proxy=None)
    results = suite.run_tests(build, wanted, [lane], "3.9.0", scratch / "librdkafka", process_timeout=180)
    say("    librdkafka tests: " + ", ".join(f"{r.test.name} {r.outcome}" for r in results))


TOOL_RUNS = (  # Kafka 4.3.0's own tools (the Java Admin client and consumer): (main class name, args)
    ("TOPICS", "--create", "--topic", "capture-tools-topic", "--partitions", "2", "--replication-factor", "1"),
    ("TOPICS", "--describe", "--topic", "capture-tools-topic"),
    ("TOPICS", "--list"),
    ("TOPICS", "--alter", "--topic", "capture-tools-topic", "--partitions", "3"),
    ("CONFIGS", "--describe", "--entity-type", "topics", "--entity-name", "capture-tools-topic"),
    ("CONFIGS", "--alter", "--entity-type", "topics", "--entity-name", "capture-tools-topic", "--add-config",
     "retention.ms=86400000"),
    ("CONFIGS", "--describe", "--entity-type", "brokers", "--entity-name", "1"),
    ("CONSOLE_PRODUCER", "--topic", "capture-tools-topic"),
    ("CONSOLE_CONSUMER", "--topic", "capture-tools-topic", "--group", "capture-tools-group", "--from-beginning",
     "--max-messages", "3", "--timeout-ms", "15000"),
    ("CONSUMER_GROUPS", "--list"),
    ("CONSUMER_GROUPS", "--describe", "--group", "capture-tools-group"),
    ("CONSUMER_GROUPS", "--describe", "--group", "capture-tools-group", "--members", "--verbose"),
    ("CONSUMER_GROUPS", "--reset-offsets", "--group", "capture-tools-group", "--topic", "capture-tools-topic",
     "--to-earliest", "--execute"),
    ("GET_OFFSETS", "--topic", "capture-tools-topic"),
    ("ACLS", "--list"),
    ("TRANSACTIONS", "list"),
    ("LOG_DIRS", "--describe"),
    ("FEATURES", "describe"),
    ("DELETE_RECORDS", "--offset-json-file", "{offsets}"),
    ("CONSUMER_GROUPS", "--delete", "--group", "capture-tools-group"),
    ("TOPICS", "--delete", "--topic", "capture-tools-topic"),
)


def _tools(bootstrap: str, scratch: Path, say) -> None:
    from compat import tool_compare
    from compat.reference_kafka import ReferenceKafkaUnavailable

    offsets = scratch / "offsets.json"
    offsets.write_text(json.dumps({"partitions": [{"topic": "capture-tools-topic", "partition": 0, "offset": 1}],
                                   "version": 1}))
    try:
        session = tool_compare.ToolSession()
        session.start()
    except (ReferenceKafkaUnavailable, tool_compare.ToolSessionFailure, OSError) as missing:
        say(f"  Kafka's tools: not run ({missing})")
        return
    try:
        for main, *args in TOOL_RUNS:
            args = [a.replace("{offsets}", str(offsets)) for a in args]
            stdin = "k1:one\nk2:two\nk3:three\n" if main == "CONSOLE_PRODUCER" else None
            extra = ["--property", "parse.key=true", "--property", "key.separator=:"] if stdin else []
            run = session.run(getattr(tool_compare, main), "--bootstrap-server", bootstrap, *args, *extra,
                              input=stdin, timeout=60)
            if run.exit != 0:
                say(f"    {main} {' '.join(args)}: exit {run.exit} {run.stderr.strip()[:200]}")
    finally:
        session.stop()


def capture(say=print) -> tuple[list[tuple[str, str, int, int, bytes]], dict[str, str]]:
    from testing.broker_process import BrokerProcess, free_port

    from .. import clients
    from ..traffic import CountingProxy

    captured = []
    java, runs = _programs()
    with tempfile.TemporaryDirectory(prefix="kafka-wire-capture-") as scratch, CountingProxy(record=True) as proxy:
        port = free_port()
        from ..librdkafka_suite import SCENARIO_BROKER_CONFIG

        # librdkafka's suite's broker settings (an authorizer allowing all without ACLs, topics auto-created
        # with 4 partitions): its ACL and auto-creation tests need them, and kafka-acls gets an authorizer.
        broker = BrokerProcess(Path(scratch) / "broker", port=port, config={
            **SCENARIO_BROKER_CONFIG["default"],
            "listeners": f"PLAINTEXT://127.0.0.1:{port}", "advertised.listeners": f"PLAINTEXT://{proxy.address}"})
        broker.start()
        try:
            proxy.start(("127.0.0.1", broker.port))
            for run in runs:
                began = time.monotonic()
                outcome = clients.run_client(run, proxy.address, quick=True, timeout=180)
                frames = proxy.take_frames()
                program = run.client if run.client != "confluent-kafka" or "idempotent" not in run.label \
                    else "confluent-kafka idempotent"
                say(f"  {run.label}: {'passed' if outcome.passed else 'FAILED ' + outcome.detail if outcome.available else 'not run: ' + outcome.detail}"
                    f", {len(frames)} requests, {time.monotonic() - began:.0f}s")
                captured += [(program, *frame) for frame in frames]
            for program, flow in _group_flows(proxy.address, say):
                began = time.monotonic()
                try:
                    flow()
                    verdict = "done"
                except Exception as error:  # a client's failure still leaves what it sent
                    verdict = f"FAILED {type(error).__name__}: {error}"[:300]
                frames = proxy.take_frames()
                say(f"  {program} group/admin flow: {verdict}, {len(frames)} requests, {time.monotonic() - began:.0f}s")
                captured += [(program, *frame) for frame in frames]
            for program, run_suite in (("franz-go", _franz_go), ("librdkafka tests", _librdkafka)):
                began = time.monotonic()
                try:
                    run_suite(proxy.address, Path(scratch), say)
                except Exception as error:  # what it sent is captured all the same
                    say(f"    {program}: FAILED {type(error).__name__}: {error}"[:300])
                frames = proxy.take_frames()
                say(f"  {program}: {len(frames)} requests, {time.monotonic() - began:.0f}s")
                captured += [(program, *frame) for frame in frames]
            began = time.monotonic()
            _tools(proxy.address, Path(scratch), say)
            frames = proxy.take_frames()
            say(f"  Kafka 4.3.0's tools: {len(frames)} requests, {time.monotonic() - began:.0f}s")
            captured += [("kafka-tools 4.3.0", *frame) for frame in frames]
        finally:
            broker.stop()
            java.cleanup()
        topic_ids = dict(proxy.topic_ids)
    return captured, topic_ids


def main(output: Path = CORPUS, say=print) -> int:
    say("capturing the requests of real clients (kafka-wire broker behind a recording proxy)")
    captured, topic_ids = capture(say)
    corpus = build_corpus(captured, topic_ids)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(corpus, indent=1, sort_keys=False) + "\n")
    entries = corpus["entries"]
    apis = sorted({e["api"] for e in entries})
    say(f"{corpus['requests_seen']} requests decoded; {len(entries)} distinct kept "
        f"({sum(1 for e in entries if 'skip' in e)} marked skip), {len(apis)} APIs: {', '.join(apis)}")
    say(f"written to {output}")
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
