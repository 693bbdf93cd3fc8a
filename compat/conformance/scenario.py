"""Scenarios and the Session they talk through: each request and its decoded answer are recorded.

    @scenario("Metadata", versions=ALL, covers=["UNKNOWN_TOPIC_OR_PARTITION"])
    def metadata_unknown_topic(s: Session, v: int):
        s.call("Metadata", v, {"topics": [{"name": s.topic("missing")}], "allow_auto_topic_creation": False})

`versions=ALL` plays the scenario once per version kafka-wire advertises for its API (each play
is a case of its own); `versions=(3, 7)` picks those; `versions=None` (default) plays it once and
the scenario chooses versions itself. Everything `s.call`/`s.receive`/`s.raw`/`s.record` returns
goes into the transcript that is compared; `s.setup(...)` sends without recording (creating a
topic a case needs, producing its data) and fails the case if the answer carries an error.

Names come from `s.topic()`, `s.group()`, `s.transactional_id()`: deterministic per case, the same
on both brokers, distinct between cases, so the transcripts compare and cases do not meet.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from client import ClientSecurity, ConnectionClosed, WireClient
from kafka_wire.errors import ErrorCode
from kafka_wire.framing import decode_response_frame
from kafka_wire.messages import APIS_BY_NAME

ALL = "all"

# The timestamp the scenarios' records carry (2100-01-01): fixed, so answers compare and the report
# does not change from run to run, and in the future, so that neither broker's time-based retention
# (7 days by default, first checked 30 s after Kafka starts) deletes a scenario's records mid-case;
# the profiles accept any timestamp (log.message.timestamp.*.max.ms).
T0 = 4_102_444_800_000


@dataclass
class Scenario:
    name: str
    api: str
    fn: Callable
    versions: Any = None  # None: once; ALL: per advertised version; iterable of ints: those
    covers: tuple[str, ...] = ()  # error names the scenario is meant to provoke (checked in the report)
    profile: str = "default"  # broker settings on both sides (profiles.py)
    quick: bool = True  # part of the CI (quick) run
    doc: str = ""


REGISTRY: dict[str, Scenario] = {}


def scenario(api: str, *, versions=None, covers: Iterable[str] = (), profile: str = "default",
             quick: bool = True, name: str | None = None):
    """Registers the decorated function as a scenario of `api` (its name: the function's)."""
    for error in covers:
        ErrorCode[error]  # a misspelt error name fails at import, not silently in the report

    def register(fn):
        key = name or fn.__name__
        if key in REGISTRY:
            raise RuntimeError(f"conformance scenario {key} defined twice")
        if api not in APIS_BY_NAME:
            raise RuntimeError(f"conformance scenario {key}: unknown API {api}")
        REGISTRY[key] = Scenario(key, api, fn, versions, tuple(covers), profile, quick,
                                 (fn.__doc__ or "").strip().split("\n")[0])
        return fn

    return register


@dataclass
class Case:
    """One play of a scenario: the scenario at one version (or once, version None)."""

    scenario: Scenario
    version: int | None

    @property
    def name(self) -> str:
        return self.scenario.name if self.version is None else f"{self.scenario.name}@v{self.version}"


class CaseFailed(Exception):
    """A set-up step of a case did not do what the case needs (recorded, and compared)."""


@dataclass
class Step:
    label: str
    api: str | None
    version: int | None
    answer: Any  # the decoded response as plain data, or {"connection": "closed"}, or a recorded value

    def as_dict(self) -> dict:
        return {"label": self.label, "api": self.api, "version": self.version, "answer": self.answer}


@dataclass
class Target:
    """A broker under test: which one ('kafka' or 'kafka-wire'), where, how to log in."""

    kind: str
    bootstrap: str
    version: str  # Kafka's version, or kafka-wire's
    security: ClientSecurity | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)  # e.g. other listeners of the profile


class Pending:
    """A request sent and not yet answered (JoinGroup waits for the other members)."""

    def __init__(self, client: WireClient, api: str, version: int, correlation_id: int, label: str):
        self.client, self.api, self.version, self.correlation_id, self.label = client, api, version, correlation_id, label


def plain(value):
    """A decoded response (or any value) as JSON-able data."""
    if hasattr(value, "to_dict"):
        return plain(value.to_dict())  # its records fields are memoryviews
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"bytes": bytes(value).hex()}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (int, float, str, bool)) or value is None:
        return value
    return repr(value)


class Session:
    """What a case uses to talk to one broker; records the transcript that is compared."""

    def __init__(self, target: Target, case: Case, timeout: float = 15.0):
        self.target = target
        self.case = case
        self.timeout = timeout
        self.steps: list[Step] = []
        self._connections: dict[str, WireClient] = {}
        self._logins: dict[str, ClientSecurity | None] = {}  # the login each named connection opened with

    # -- names ----------------------------------------------------------------------------------

    def _name(self, kind: str, suffix: str) -> str:
        base = self.case.name.replace("@", "-").replace("_", "-")
        return f"{base}-{kind}{'-' + suffix if suffix else ''}"

    def topic(self, suffix: str = "") -> str:
        return self._name("t", suffix)

    def group(self, suffix: str = "") -> str:
        return self._name("g", suffix)

    def transactional_id(self, suffix: str = "") -> str:
        return self._name("txn", suffix)

    # -- connections ------------------------------------------------------------------------------

    def conn(self, name: str = "main", *, security: ClientSecurity | None | bool = True,
             bootstrap: str | None = None, client_id: str = "conformance") -> WireClient:
        """The connection called `name` (opened on first use, logged in with the target's security
        unless security=False, or with the one given; opened again after the broker closed it, with
        the login it had, so a closed connection of one user never comes back as another's)."""
        existing = self._connections.get(name)
        if existing is not None and not existing.closed:
            return existing
        if security is True and name in self._logins:
            chosen = self._logins[name]
        else:
            chosen = self.target.security if security is True else (None if security is False else security)
        self._logins[name] = chosen
        client = WireClient(bootstrap or self.target.bootstrap, timeout=self.timeout, client_id=client_id,
                            security=chosen)
        self._connections[name] = client
        return client

    def close(self) -> None:
        for client in self._connections.values():
            try:
                client.close()
            except OSError:
                pass
        self._connections.clear()

    # -- requests --------------------------------------------------------------------------------

    def call(self, api: str, version: int, body, *, conn: str = "main", label: str | None = None,
             wait: float | None = None, record: bool = True):
        """Sends one request and returns its decoded answer (None if the connection closed); the
        answer, or the closed connection, goes into the transcript unless record=False."""
        client = self.conn(conn)
        label = label or f"{api} v{version}"
        try:
            answer = client.call(api, version, body, wait=wait)
        except (ConnectionClosed, ConnectionResetError, BrokenPipeError):
            if record:
                self._record(label, api, version, {"connection": "closed"})
            return None
        except socket.timeout:
            if record:
                self._record(label, api, version, {"connection": "no answer"})
            return None
        if record:
            self._record(label, api, version, plain(answer))
        return answer

    def setup(self, api: str, version: int, body, *, conn: str = "main", ok: Callable | None = None, wait=None):
        """A request the case needs done but does not compare; fails the case when the answer
        carries an error (`ok(answer)` decides instead when given)."""
        answer = self.call(api, version, body, conn=conn, record=False, wait=wait)
        if answer is None:
            raise CaseFailed(f"set-up {api} v{version}: connection closed")
        errors = list(_error_codes(plain(answer)))
        good = ok(answer) if ok else not any(errors)
        if not good:
            raise CaseFailed(f"set-up {api} v{version} failed: "
                             f"{[ErrorCode.from_code(e).name for e in errors if e]} {plain(answer)}"[:2000])
        return answer

    def send(self, api: str, version: int, body, *, conn: str, label: str | None = None) -> Pending:
        """Sends without waiting for the answer; `receive` reads it (one pending request per connection)."""
        client = self.conn(conn)
        client.send_raw(client.frame(api, version, body))
        return Pending(client, api, version, client.correlation_id, label or f"{api} v{version}")

    def receive(self, pending: Pending, *, record: bool = True, wait: float = 0.0):
        client = pending.client
        client.sock.settimeout(self.timeout + wait)
        try:
            frame = client.read_frame()
        except (ConnectionClosed, ConnectionResetError, BrokenPipeError):
            if record:
                self._record(pending.label, pending.api, pending.version, {"connection": "closed"})
            return None
        except socket.timeout:
            client.close()
            if record:
                self._record(pending.label, pending.api, pending.version, {"connection": "no answer"})
            return None
        finally:
            if not client.closed:
                client.sock.settimeout(self.timeout)
        answer = client.decode_response(pending.api, pending.version, frame)
        if record:
            self._record(pending.label, pending.api, pending.version, plain(answer))
        return answer

    def raw(self, data: bytes, *, conn: str = "raw", label: str, api: str | None = None, version: int | None = None,
            wait: float = 3.0):
        """Sends raw bytes (a malformed frame) and records what happened to the connection: an
        answer (decoded when api/version are given), or that it closed, or nothing within `wait` s."""
        client = self.conn(conn)
        try:
            client.send_raw(data)
            client.sock.settimeout(wait)
            frame = client.read_frame()
        except (ConnectionClosed, ConnectionResetError, BrokenPipeError):
            self._record(label, api, version, {"connection": "closed"})
            return None
        except socket.timeout:
            client.close()
            self._record(label, api, version, {"connection": "no answer"})
            return None
        if api is not None:
            # A hand-made request carries a correlation id of its own making: not checked.
            answer = plain(decode_response_frame(APIS_BY_NAME[api], version, frame, None))
        else:
            answer = {"frame": frame.hex()}
        self._record(label, api, version, answer)
        return answer

    def record(self, label: str, value) -> None:
        """Records a value the case derived (e.g. the records a fetch returned, decoded)."""
        self._record(label, None, None, plain(value))

    def _record(self, label, api, version, answer) -> None:
        self.steps.append(Step(label, api, version, answer))

    # -- helpers every area needs ------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1, configs: Mapping[str, str] | None = None,
                     replication_factor: int = 1) -> None:
        """Creates a topic (not recorded) and waits until its partitions have a leader."""
        self.setup("CreateTopics", 5, {
            "topics": [{"name": name, "num_partitions": partitions, "replication_factor": replication_factor,
                        "assignments": [], "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}],
            "timeout_ms": 30000, "validate_only": False})
        self.wait_for_leaders(name, partitions)

    def wait_for_leaders(self, topic: str, partitions: int, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            answer = self.call("Metadata", 9, {"topics": [{"name": topic}], "allow_auto_topic_creation": False,
                                               "include_cluster_authorized_operations": False,
                                               "include_topic_authorized_operations": False}, record=False)
            if answer is not None:
                found = [t for t in answer.topics if t.name == topic and t.error_code == 0]
                if found and len(found[0].partitions) == partitions and \
                        all(p.leader_id >= 0 and p.error_code == 0 for p in found[0].partitions):
                    # And the leader really serves it (KRaft brokers apply metadata asynchronously).
                    offsets = self.call("ListOffsets", 5, {"replica_id": -1, "isolation_level": 0, "topics": [
                        {"name": topic, "partitions": [{"partition_index": p, "current_leader_epoch": -1,
                                                        "timestamp": -1} for p in range(partitions)]}]},
                        record=False)
                    if offsets is not None and all(p.error_code == 0 for t in offsets.topics for p in t.partitions):
                        return
            if time.monotonic() > deadline:
                raise CaseFailed(f"topic {topic} has no leaders after {timeout:.0f}s")
            time.sleep(0.1)

    def produce(self, topic: str, partition: int, records: list[tuple[bytes | None, bytes | None]], *,
                timestamp: int = T0, acks: int = -1, version: int = 8, **batch_options) -> int:
        """Appends one batch (not recorded); returns its base offset."""
        from kafka_wire.record_codec import Record, build_batch

        batch = build_batch([Record(i, 0, key, value) for i, (key, value) in enumerate(records)],
                            base_timestamp=timestamp, **batch_options)
        answer = self.setup("Produce", version, {"transactional_id": None, "acks": acks, "timeout_ms": 30000,
                                                  "topic_data": [{"name": topic, "partition_data": [
                                                      {"index": partition, "records": batch}]}]})
        return answer.responses[0].partition_responses[0].base_offset

    def find_coordinator(self, key: str, key_type: int = 0, timeout: float = 30.0) -> None:
        """Waits until the coordinator of `key` is available (not recorded): both brokers are one
        node, so it is the connection we have."""
        deadline = time.monotonic() + timeout
        while True:
            answer = self.call("FindCoordinator", 3, {"key": key, "key_type": key_type}, record=False)
            if answer is not None and answer.error_code == 0:
                return
            if time.monotonic() > deadline:
                raise CaseFailed(f"no coordinator for {key} after {timeout:.0f}s")
            time.sleep(0.2)

    def wait_until(self, condition: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise CaseFailed(f"timed out waiting for {what}")
            time.sleep(0.1)


def _error_codes(data) -> Iterable[int]:
    """Every error code in a response (fields named error_code, anywhere)."""
    if isinstance(data, dict):
        for key, value in data.items():
            if key == "error_code" and isinstance(value, int):
                yield value
            else:
                yield from _error_codes(value)
    elif isinstance(data, list):
        for value in data:
            yield from _error_codes(value)


error_codes_in = _error_codes
