"""A structured request fuzzer: well-typed random requests of every advertised API and version.

Requests are built from kafka_wire's message specs (so they always parse): random strings (empty,
long, unicode, dots, the name of a real topic), negative and huge integers, empty and long
arrays, nulls where a field is nullable, unknown and real topic ids, record batches that are
valid, empty or garbage. Each case is reproducible from (seed, api key, version, index) alone.

`fuzz_broker` sends them over real sockets to a running broker and reports what a client would
see: an answer that does not parse with the API's response schema, a wrong correlation id, a
connection closed or an answer not sent. The broker's own log says which handlers failed (the
broker answers those UNKNOWN_SERVER_ERROR and logs "error handling <API>"); the test reads it.

Waiting fields (timeout_ms, max_wait_ms, session/rebalance timeouts) get small values only, so
no request legitimately holds its answer for long.
"""

from __future__ import annotations

import random
import socket
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from client import ConnectionClosed, WireClient
from kafka_wire.framing import CorrelationIdMismatch, decode_response_frame
from kafka_wire.messages import APIS
from kafka_wire.primitives import DecodeError
from kafka_wire.record_codec import Record, build_batch
from kafka_wire.schema import (BOOL, BYTES, FLOAT64, INT8, INT16, INT32, INT64, RECORDS, UINT16, UINT32,
                               UUID, Array, Api, Field, StructType, _String)

FUZZ_TOPIC = "fuzz-topic"
FUZZ_GROUP = "fuzz-group"
_INT_EDGES = {
    INT8: [0, 1, -1, 2, 3, 127, -128],
    INT16: [0, 1, -1, 2, 3, 32767, -32768],
    UINT16: [0, 1, 65535],
    INT32: [0, 1, -1, 2, 3, 2**31 - 1, -(2**31), 1000],
    UINT32: [0, 1, 2**32 - 1],
    INT64: [0, 1, -1, -2, 2**63 - 1, -(2**63), 1000],
}
_INT_RANGES = {INT8: 7, INT16: 15, UINT16: 16, INT32: 31, UINT32: 32, INT64: 63}
_WAITING = ("timeout", "wait")


@dataclass
class Known:
    """Names and ids of things that exist on the broker, so some requests reach deep code."""

    topic: str = FUZZ_TOPIC
    topic_id: uuid.UUID | None = None
    group: str = FUZZ_GROUP


# APIs whose requests name no internal topic: Kafka lets them delete __consumer_offsets, change its
# partition count or its configs too, and a broker without them serves no group afterwards, which
# is not what the run is looking for.
ALTERING_APIS = {"DeleteTopics", "CreatePartitions", "DeleteRecords", "AlterConfigs", "IncrementalAlterConfigs",
                 "AlterPartitionReassignments", "AlterReplicaLogDirs", "ElectLeaders"}
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")


class RequestGenerator:
    """Random values for a message's fields, typed by the spec, from one `random.Random`."""

    def __init__(self, rng: random.Random, known: Known) -> None:
        self.rng = rng
        self.known = known
        self.internal_names = True

    def request(self, api: Api, version: int):
        self.internal_names = api.name not in ALTERING_APIS
        return self._struct(api.request.struct, version, api.is_flexible(version), 0)

    def _struct(self, struct: StructType, version: int, flexible: bool, depth: int):
        values = {}
        for f in struct.fields:
            if not f.versions[0] <= version <= f.versions[1]:
                continue
            if f.tag is not None and (not flexible or self.rng.random() < 0.5):
                continue
            values[f.name] = self._field(f, version, flexible, depth)
        return struct.cls(**values)

    def _field(self, f: Field, version: int, flexible: bool, depth: int):
        nullable = f.is_nullable(version)
        if nullable and self.rng.random() < 0.12:
            return None
        t = f.type
        if t in _INT_RANGES and any(word in f.name for word in _WAITING):
            return self.rng.choice([-1, 0, 1, 20, 100] + ([-(2**31)] if t is INT32 else []))
        return self._value(t, f.name, version, flexible, depth)

    def _value(self, t, name: str, version: int, flexible: bool, depth: int):
        rng = self.rng
        if t in _INT_RANGES:
            roll = rng.random()
            if roll < 0.45:
                return rng.choice(_INT_EDGES[t])
            if roll < 0.8:
                return rng.randint(-2, 5) if t not in (UINT16, UINT32) else rng.randint(0, 5)
            bits = _INT_RANGES[t]
            low = 0 if t in (UINT16, UINT32) else -(2**bits)
            high = 2**bits - 1 if t in (UINT16, UINT32) else 2**bits - 1
            return rng.randint(low, high)
        if t is BOOL:
            return rng.random() < 0.5
        if t is FLOAT64:
            return rng.choice([0.0, 1.0, -1.0, 1e308, float("inf"), float("-inf"), float("nan"), rng.uniform(-1e6, 1e6)])
        if t is UUID:
            choices = [uuid.UUID(int=0), uuid.UUID(int=rng.getrandbits(128))]
            if self.known.topic_id is not None:
                choices += [self.known.topic_id, self.known.topic_id]
            return rng.choice(choices)
        if isinstance(t, _String):
            return self._string(name)
        if t is BYTES:
            return self._bytes()
        if t is RECORDS:
            return self._records()
        if isinstance(t, Array):
            return self._array(t, name, version, flexible, depth)
        if isinstance(t, StructType):
            return self._struct(t, version, flexible, depth + 1)
        raise TypeError(f"no generator for {t!r}")

    def _string(self, name: str) -> str:
        rng = self.rng
        pool = [
            "", "", self.known.topic, self.known.topic, self.known.group, ".", "..", "a" * 249, "a" * 300,
            "with space", "ünïcödé-名前", "\x00", "topic/../x", "-1", "User:ANONYMOUS", "*", "PLAIN", "SCRAM-SHA-256",
        ]
        if self.internal_names:
            pool += INTERNAL_TOPICS
        if rng.random() < 0.5:
            return rng.choice(pool)
        alphabet = "abcdefghijklmnopqrstuvwxyz0123456789._-"
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 24)))

    def _bytes(self) -> bytes:
        rng = self.rng
        return rng.choice([b"", b"\x00", bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 64))),
                           b"\x00\x01" + b"\xff" * 20])

    def _records(self):
        rng = self.rng
        roll = rng.random()
        if roll < 0.15:
            return None
        if roll < 0.25:
            return b""
        if roll < 0.45:
            return bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 120)))
        records = [Record(offset_delta=i, timestamp_delta=i, key=rng.choice([None, b"k", b""]),
                          value=rng.choice([None, b"v", b"x" * 100]), headers=[])
                   for i in range(rng.randint(1, 4))]
        producer_id = rng.choice([-1, -1, 0, 1, 2**62])
        batch = bytearray(build_batch(
            records, compression=rng.choice([0, 0, 1, 2, 3, 4]), producer_id=producer_id,
            producer_epoch=rng.choice([-1, 0, 1]) if producer_id >= 0 else -1,
            base_sequence=rng.choice([-1, 0, 5]) if producer_id >= 0 else -1,
            is_transactional=producer_id >= 0 and rng.random() < 0.3,
            is_control=rng.random() < 0.05, base_timestamp=rng.choice([0, 1700000000000, -5])))
        if rng.random() < 0.2:  # a flipped byte: a CRC or header error
            position = rng.randrange(len(batch))
            batch[position] ^= 0xFF
        if rng.random() < 0.1:  # two batches
            batch = batch + batch
        return bytes(batch)

    def _array(self, t: Array, name: str, version: int, flexible: bool, depth: int):
        rng = self.rng
        roll = rng.random()
        if depth >= 3 or roll < 0.2:
            count = 0
        elif roll < 0.9:
            count = rng.randint(1, 3)
        else:
            count = rng.randint(10, 40)
        return [self._value(t.item, name, version, flexible, depth + 1) for _ in range(count)]


def kafka_closes(api: Api, request) -> str | None:
    """Why Kafka itself closes the connection on this well-formed request, else None: the request
    classes whose validation throws while the request is parsed (an IllegalArgumentException
    there is an unparseable request, and the socket server closes the connection)."""
    if api.name in ("DescribeAcls", "DeleteAcls", "CreateAcls"):
        # DescribeAclsRequest/DeleteAclsRequest/CreateAclsRequest.validate: any of the four enums
        # equal to UNKNOWN (code 0) as sent; other unknown codes pass.
        entries = {"DescribeAcls": lambda: [request], "DeleteAcls": lambda: request.filters,
                   "CreateAcls": lambda: request.creations}[api.name]()
        for entry in entries:
            codes = [getattr(entry, name) for name in ("resource_type_filter", "resource_type", "pattern_type_filter",
                                                       "resource_pattern_type", "operation", "permission_type")
                     if hasattr(entry, name)]
            if 0 in codes:
                return "an ACL (filter) with an UNKNOWN element"
    return None


def request_case(seed: int, api: Api, version: int, index: int, known: Known):
    """The request of one case, a function of its coordinates alone."""
    rng = random.Random(f"{seed}:{api.key}:{version}:{index}")
    return RequestGenerator(rng, known).request(api, version)


@dataclass
class Finding:
    api: str
    version: int
    index: int
    what: str

    def __str__(self) -> str:
        return f"{self.api} v{self.version} case {self.index}: {self.what}"


@dataclass
class FuzzReport:
    sent: int = 0
    answered: int = 0
    unanswered_by_design: int = 0  # Produce acks=0
    closed_as_kafka: int = 0  # closed where Kafka closes too (kafka_closes)
    findings: list[Finding] = field(default_factory=list)
    # (api, version, index) -> "closed", or the sorted error codes of the answer (every
    # error_code-like field, at any depth), for comparing two brokers' answers case by case.
    outcomes: dict[tuple[str, int, int], object] = field(default_factory=dict)


def error_codes(value) -> list[int]:
    """Every error code an answer carries, at any depth, sorted."""
    found = []

    def walk(v):
        if isinstance(v, list):
            for item in v:
                walk(item)
        elif hasattr(v, "_fields"):
            for f in v._fields:
                item = getattr(v, f.name)
                if f.name.endswith("error_code") and isinstance(item, int):
                    found.append(item)
                else:
                    walk(item)

    walk(value)
    return sorted(found)


class _Connection:
    """One connection of the fuzzer; read_frame() is None once the broker has closed it."""

    def __init__(self, host: str, port: int, timeout: float, login=None) -> None:
        # login(host, port, timeout) -> a client logged in on a SASL listener, else plain TCP.
        self.client = (login(host, port, timeout) if login
                       else WireClient(f"{host}:{port}", timeout=timeout, client_id="request-fuzz"))

    def close(self) -> None:
        try:
            self.client.close()
        except OSError:
            pass

    def send(self, api: Api, version: int, body) -> int:
        self.client.send_raw(self.client.frame(api.name, version, body))
        return self.client.correlation_id

    def read_frame(self) -> bytearray | None:
        try:
            return self.client.read_frame()
        except (ConnectionClosed, ConnectionResetError):
            return None


def _check_answer(api: Api, version: int, correlation_id: int, frame) -> tuple[str | None, object]:
    """(what is wrong with an answer or None, the decoded answer)."""
    try:
        return None, decode_response_frame(api, version, frame, correlation_id)
    except CorrelationIdMismatch as exc:
        return str(exc), None
    except (DecodeError, UnicodeDecodeError, ValueError) as exc:
        return f"the answer does not parse as {api.name}Response v{version}: {exc}", None


def fuzz_broker(bootstrap: str, advertised: dict[int, tuple[int, int]], seed: int, cases: int,
                known: Known, timeout: float = 60.0, only: set[str] | None = None, login=None) -> FuzzReport:
    """Send `cases` random requests for every advertised (API, version) and check every answer.
    `login`: how to open an authenticated connection (see sasl_login), for a SASL listener."""
    host, _, port = bootstrap.rpartition(":")
    report = FuzzReport()
    for key, (low, high) in sorted(advertised.items()):
        api = APIS.get(key)
        if api is None or (only and api.name not in only):
            continue
        for version in range(low, high + 1):
            conn = _Connection(host, int(port), timeout, login)
            try:
                for index in range(cases):
                    request = request_case(seed, api, version, index, known)
                    try:
                        correlation_id = conn.send(api, version, request)
                    except (BrokenPipeError, ConnectionResetError):
                        report.findings.append(Finding(api.name, version, index, "connection closed before the request was sent"))
                        conn.close()
                        conn = _Connection(host, int(port), timeout, login)
                        continue
                    report.sent += 1
                    if api.name == "Produce" and request.acks == 0:
                        # No answer; Kafka closes the connection when a partition failed. The
                        # broker log shows whether a handler failed.
                        report.unanswered_by_design += 1
                        conn.close()
                        conn = _Connection(host, int(port), timeout, login)
                        continue
                    closes = kafka_closes(api, request)
                    try:
                        frame = conn.read_frame()
                    except socket.timeout:
                        report.findings.append(Finding(api.name, version, index, f"no answer within {timeout:.0f} s"))
                        frame = None
                    if frame is None:
                        timed_out = any(f.what.startswith("no answer") and f.index == index and f.api == api.name
                                        and f.version == version for f in report.findings[-1:])
                        report.outcomes[(api.name, version, index)] = "no answer" if timed_out else "closed"
                        if closes:
                            report.closed_as_kafka += 1
                        elif not any(f.what.startswith("no answer") for f in report.findings[-1:]):
                            report.findings.append(Finding(api.name, version, index, "connection closed without an answer"))
                        conn.close()
                        conn = _Connection(host, int(port), timeout, login)
                        continue
                    report.answered += 1
                    if closes:
                        report.findings.append(Finding(api.name, version, index, f"answered, where Kafka closes the connection: {closes}"))
                        continue
                    problem, answer = _check_answer(api, version, correlation_id, frame)
                    report.outcomes[(api.name, version, index)] = error_codes(answer)
                    if problem:
                        report.findings.append(Finding(api.name, version, index, problem))
            finally:
                conn.close()
    return report


# -- running it by hand, against kafka-wire and the reference Kafka --------------------------------

SASL_USER, SASL_PASSWORD = "fuzz-admin", "fuzz-admin-pw"


def sasl_login(mechanism: str, username: str = SASL_USER, password: str = SASL_PASSWORD):
    """A `login` for fuzz_broker: a connection that has passed SASL `mechanism` (PLAIN, SCRAM-*)."""
    def login(host: str, port: int, timeout: float) -> WireClient:
        client = WireClient(f"{host}:{port}", timeout=timeout, client_id="request-fuzz")
        try:
            client.sasl_authenticate(mechanism, username, password)
        except BaseException:
            client.close()
            raise
        return client

    return login



def prepare_broker(bootstrap: str) -> tuple[dict[int, tuple[int, int]], Known]:
    """The broker's advertised versions, and the fuzz topic (created, 3 partitions) with its id."""
    import time

    with WireClient(bootstrap, client_id="request-fuzz-setup") as client:
        advertised = client.negotiate()
        client.request("CreateTopics", {"topics": [{"name": FUZZ_TOPIC, "num_partitions": 3, "replication_factor": 1}],
                                        "timeout_ms": 10000})
        for _ in range(50):  # KRaft publishes a new topic a moment after creating it
            topic = client.request("Metadata", {"topics": [{"name": FUZZ_TOPIC}]}).topics[0]
            if topic.error_code == 0:
                return advertised, Known(topic_id=topic.topic_id)
            time.sleep(0.2)
    raise RuntimeError(f"{FUZZ_TOPIC} was not created on {bootstrap}")


def compare_outcomes(ours: FuzzReport, theirs: FuzzReport) -> dict[str, list[tuple[int, int, object, object]]]:
    """Per API: the cases whose outcome (closed, or the answer's error codes) differs."""
    differences: dict[str, list] = {}
    for case, outcome in sorted(ours.outcomes.items()):
        other = theirs.outcomes.get(case)
        if outcome != other:
            differences.setdefault(case[0], []).append((case[1], case[2], outcome, other))
    return differences


def main(argv: list[str] | None = None) -> int:
    """python -m compat.request_fuzz [--seed N] [--cases N] [--api Name ...] [--against-kafka 4.3.0]:
    fuzz a fresh kafka-wire broker and print what the checks found; with --against-kafka, send the
    same cases (the versions both advertise) to that reference Kafka too and print the cases
    whose outcome differs, per API (the way to learn Kafka's error code for a crash's input)."""
    import argparse
    import re
    import tempfile

    from testing.broker_process import running_broker

    parser = argparse.ArgumentParser(prog="python -m compat.request_fuzz", description=main.__doc__)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cases", type=int, default=12, help="cases per API version")
    parser.add_argument("--api", action="append", help="only this API (repeatable)")
    parser.add_argument("--against-kafka", metavar="VERSION", help="compare with this reference Kafka")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a broker property for both brokers (repeatable), e.g. authorizer.class.name=...")
    parser.add_argument("--cluster", type=int, metavar="N",
                        help="fuzz a ZooKeeper cluster of N kafka-wire brokers (each in turn), not one broker")
    parser.add_argument("--sasl", metavar="MECHANISM",
                        help="fuzz through a SASL_PLAINTEXT listener, logged in with MECHANISM (PLAIN, "
                             "SCRAM-SHA-256, SCRAM-SHA-512) as a super user")
    args = parser.parse_args(argv)
    only = set(args.api) if args.api else None
    config = {"group.initial.rebalance.delay.ms": 0, **dict(item.split("=", 1) for item in args.set)}
    if args.cluster or args.sasl:
        if args.against_kafka:
            parser.error("--against-kafka compares one plain broker; not with --cluster or --sasl")
        return _fuzz_cluster_or_sasl(args, config, only)
    with running_broker(tempfile.mkdtemp(prefix="request-fuzz-"), config=config, require_clean_exit=False) as broker:
        advertised, known = prepare_broker(broker.bootstrap)
        if args.against_kafka:
            from compat.reference_kafka import running_reference_kafka

            with running_reference_kafka(args.against_kafka, config=config) as kafka:
                theirs_advertised, theirs_known = prepare_broker(kafka.bootstrap)
                common = {key: (max(low, theirs_advertised[key][0]), min(high, theirs_advertised[key][1]))
                          for key, (low, high) in advertised.items() if key in theirs_advertised}
                ours = fuzz_broker(broker.bootstrap, common, args.seed, args.cases, known, only=only)
                theirs = fuzz_broker(kafka.bootstrap, common, args.seed, args.cases, theirs_known, only=only)
            for api, cases in compare_outcomes(ours, theirs).items():
                print(f"{api}: {len(cases)} cases differ")
                for version, index, outcome, other in cases[:10]:
                    print(f"  v{version} case {index}: kafka-wire {outcome}, Kafka {other}")
            for finding in theirs.findings:
                print(f"Kafka: {finding}")
        else:
            ours = fuzz_broker(broker.bootstrap, advertised, args.seed, args.cases, known, only=only)
        print(f"kafka-wire: {ours.sent} requests sent, {ours.answered} answered, {len(ours.findings)} findings")
        for finding in ours.findings:
            print(f"kafka-wire: {finding}")
        failures = handler_failures([broker])
        return 1 if ours.findings or failures else 0


def handler_failures(brokers) -> list[str]:
    """Print and return the handler failures the brokers' logs show."""
    import re

    failures = []
    for broker in brokers:
        for line in re.findall(r"ERROR \[kafka_wire\.server\] (error handling .*)",
                               broker.log_path.read_text(errors="replace")):
            print(f"kafka-wire handler failed: {line} (traceback in {broker.log_path})")
            failures.append(line)
    return failures


def _fuzz_cluster_or_sasl(args, config: dict, only: set[str] | None) -> int:
    """--cluster N (each broker of a ZooKeeper cluster in turn) and/or --sasl MECHANISM (a
    SASL_PLAINTEXT listener beside the PLAINTEXT one, which sets up and carries inter-broker
    traffic; the fuzzed connections log in as a super user)."""
    import contextlib
    import shutil
    import tempfile

    from testing.broker_process import free_port, running_broker

    login = None
    if args.sasl:
        login = sasl_login(args.sasl)
        config = {"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
                  "inter.broker.listener.name": "PLAINTEXT", "super.users": f"User:{SASL_USER};User:ANONYMOUS",
                  **config}
    with contextlib.ExitStack() as stack:
        if args.cluster:
            from testing.cluster import Cluster

            cluster = Cluster(Path(tempfile.mkdtemp(prefix="request-fuzz-cluster-")), args.cluster, config)
            sasl_ports = {}
            if args.sasl:
                for node, broker in cluster.brokers.items():
                    sasl_ports[node] = free_port()
                    broker.config["listeners"] = (f"PLAINTEXT://{broker.bootstrap},"
                                                  f"SASL_PLAINTEXT://127.0.0.1:{sasl_ports[node]}")
                    _add_sasl_users([broker.log_dir])
            stack.callback(cluster.stop)
            data_dirs = [cluster.base_dir]
            cluster.start()
            print(f"cluster data in {cluster.base_dir}")
            brokers = list(cluster.brokers.values())
        else:
            data_dir = Path(tempfile.mkdtemp(prefix="request-fuzz-"))
            sasl_port, plain_port = free_port(), free_port()
            config = {**config, "listeners": f"PLAINTEXT://127.0.0.1:{plain_port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}"}
            _add_sasl_users([data_dir / "logs"])
            brokers = [stack.enter_context(running_broker(data_dir, port=plain_port, config=config,
                                                          require_clean_exit=False))]
            sasl_ports = {0: sasl_port}
            data_dirs = [data_dir]
        advertised, known = prepare_broker(brokers[0].bootstrap)
        findings = 0
        for index, broker in enumerate(brokers):
            target = broker.bootstrap
            if args.sasl:
                target = f"127.0.0.1:{list(sasl_ports.values())[index]}"
            report = fuzz_broker(target, advertised, args.seed, args.cases, known, only=only, login=login)
            print(f"kafka-wire {target}: {report.sent} requests sent, {report.answered} answered, "
                  f"{len(report.findings)} findings")
            for finding in report.findings:
                print(f"kafka-wire {target}: {finding}")
            findings += len(report.findings)
        failures = handler_failures(brokers)
    if findings or failures:
        print(f"data and broker logs kept in {data_dirs[0]}")
        return 1
    for path in data_dirs:
        shutil.rmtree(path, ignore_errors=True)
    return 0


def _add_sasl_users(log_dirs) -> None:
    from broker.security.credentials import CredentialStore
    from kafka_wire.sasl import SCRAM_MECHANISMS

    for log_dir in log_dirs:
        log_dir.mkdir(parents=True, exist_ok=True)
        store = CredentialStore(log_dir)
        for mechanism in SCRAM_MECHANISMS.values():
            store.set_password(SASL_USER, SASL_PASSWORD, mechanism)


if __name__ == "__main__":
    raise SystemExit(main())
