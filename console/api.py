"""The console's JSON API under /api: what the pages show, answered with Kafka's semantics.

Each endpoint turns into Kafka API calls made by the broker's own handlers on behalf of the
console user (console/kafka_calls.py), so a user sees and may change exactly what their Kafka
client could. A Kafka error becomes an HTTP status and a body `{"error": <Kafka error name>,
"message": <what went wrong>}`: an unknown topic or group is 404, a denied operation 403, an
offset past the end 416, bad input 400, a write in read-only mode 403 (error READ_ONLY).
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import json
import re

from kafka_wire.consumer_protocol import assigned_partitions
from kafka_wire.errors import ErrorCode
from kafka_wire.record_codec import Record, build_batch, decode_batches, iter_records_with_offsets
from kafka_wire.records import ATTR_CONTROL, InvalidRecordBatch

from broker.share_groups import share_records_in_flight

from .kafka_calls import KafkaCalls, KafkaError, check

EARLIEST, LATEST = -2, -1
# One Fetch of the message browser reads at most this much; a page at most MAX_READS of them.
FETCH_BYTES = 1 << 20
MAX_READS = 8
MAX_LIMIT = 500
# A page stops growing past this many bytes of keys, values and headers (JSON is built on the loop).
PAGE_BYTES = 4 << 20
# Values longer than this are cut in the browser's answer (the page says so).
SHOWN_BYTES = 64 * 1024
CONFIG_SOURCES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
                  3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG",
                  6: "DYNAMIC_BROKER_LOGGER_CONFIG", 7: "CLIENT_METRICS_CONFIG", 8: "GROUP_CONFIG"}
TOPIC_RESOURCE = 2

NOT_FOUND = {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.UNKNOWN_TOPIC_ID}
CONFLICT = {ErrorCode.TOPIC_ALREADY_EXISTS, ErrorCode.NON_EMPTY_GROUP, ErrorCode.UNKNOWN_MEMBER_ID,
            ErrorCode.ILLEGAL_GENERATION, ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.STALE_MEMBER_EPOCH}
UNAVAILABLE = {ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
               ErrorCode.NOT_COORDINATOR, ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.NOT_LEADER_OR_FOLLOWER,
               ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.KAFKA_STORAGE_ERROR}


class ApiError(Exception):
    """An answer other than 200: HTTP status, Kafka-style error name, message."""

    details: dict | None = None  # more fields of the error body

    def __init__(self, status: int, error: str, message: str) -> None:
        super().__init__(message)
        self.status, self.error, self.message = status, error, message


def http_status(error: ErrorCode) -> int:
    if error in NOT_FOUND:
        return 404
    if error.name.endswith("AUTHORIZATION_FAILED"):
        return 403
    if error in CONFLICT:
        return 409
    if error == ErrorCode.OFFSET_OUT_OF_RANGE:
        return 416
    if error in UNAVAILABLE:
        return 503
    if error == ErrorCode.UNKNOWN_SERVER_ERROR:
        return 500
    return 400


def from_kafka(exc: KafkaError) -> ApiError:
    return ApiError(http_status(exc.error), exc.error.name, exc.message)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "INVALID_REQUEST", message)


def _whole_number(value: str | None, what: str, *, minimum: int = 0) -> int | None:
    if value is None or value == "":
        return None
    if not re.fullmatch(r"-?\d+", value.strip()):
        raise bad_request(f"{what} must be a whole number, not {value!r}")
    number = int(value)
    if number < minimum:
        raise bad_request(f"{what} must be at least {minimum}, not {number}")
    return number


def parse_timestamp(value: str) -> int:
    """Milliseconds since the epoch, from a number of them or an ISO 8601 time (UTC unless it says)."""
    text = value.strip()
    if re.fullmatch(r"\d+", text):
        return int(text)
    text = text.replace("Z", "+00:00").replace("z", "+00:00")
    # A '+' of an unencoded query string arrives as a space: "...T10:00:00 01:00".
    text = re.sub(r"(T[\d:.]+) (\d\d:?\d\d)$", r"\1+\2", text)
    try:
        parsed = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise bad_request(f"Malformed timestamp {value!r}: give milliseconds since the epoch or an ISO 8601 "
                          f"time such as 2026-11-25T00:00:00Z") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.timezone.utc)
    return int(parsed.timestamp() * 1000)


def _shown(data: bytes | None, *, keep_wire_format: bool = False) -> dict | None:
    """Bytes for the page: base64 (for hex), UTF-8 text when it decodes, cut at SHOWN_BYTES. With
    `keep_wire_format`, bytes in the Schema Registry's wire format are kept whole as `raw`, for
    registry_views.decode_messages (which removes them before the answer is sent)."""
    if data is None:
        return None
    data = bytes(data)
    cut = data[:SHOWN_BYTES]
    text = None
    # A cut may split a character: up to 3 bytes of it are dropped from the text.
    for end in range(len(cut), max(len(cut) - 4, -1) if len(data) > SHOWN_BYTES else len(cut) - 1, -1):
        try:
            text = cut[:end].decode("utf-8")
            break
        except UnicodeDecodeError:
            continue
    shown = {"size": len(data), "truncated": len(data) > SHOWN_BYTES, "base64": base64.b64encode(cut).decode(),
             "text": text}
    if keep_wire_format and len(data) >= 5 and data[0] == 0:  # magic byte 0, a 4-byte schema id
        shown["raw"] = data
    return shown


def _decode_fetched(data: bytes, start: int) -> list[dict]:
    """The data records at or after `start` in a fetched byte range (control batches skipped)."""
    out = []
    for header, records in decode_batches(data):
        if header.attributes & ATTR_CONTROL:
            continue
        timestamp_type = "LogAppendTime" if header.attributes & 0x08 else "CreateTime"
        for offset, timestamp, record in iter_records_with_offsets(header, records):
            if offset < start:
                continue
            out.append({"offset": offset, "timestamp": timestamp, "timestamp_type": timestamp_type,
                        "key": _shown(record.key, keep_wire_format=True),
                        "value": _shown(record.value, keep_wire_format=True),
                        "headers": [{"key": k, "value": _shown(v)} for k, v in record.headers]})
    return out


def _read_slice(records) -> bytes:
    """A fetched partition's records as bytes (a log file slice is read here, off the event loop)."""
    if records is None:
        return b""
    if hasattr(records, "read_bytes"):
        try:
            return records.read_bytes()
        finally:
            records.close()
    return bytes(records)


class ConsoleApi:
    """The endpoints; `calls` speaks for the logged-in user."""

    def __init__(self, broker, sampler, read_only: bool) -> None:
        self.broker = broker
        self.sampler = sampler
        self.read_only = read_only

    # -- helpers --------------------------------------------------------------------------------

    @staticmethod
    async def _metadata(calls: KafkaCalls, topics: list[str] | None) -> dict:
        return await calls.call("Metadata", 12, allow_auto_topic_creation=False,
                                topics=None if topics is None else [{"name": t} for t in topics])

    async def _topic_metadata(self, calls: KafkaCalls, topic: str) -> dict:
        answer = await self._metadata(calls, [topic])
        entry = answer["topics"][0]
        if entry["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {topic!r} does not exist")
        check(entry["error_code"], f"Topic {topic!r}")
        return entry

    @staticmethod
    async def _sizes(calls: KafkaCalls, topics: list[dict] | None) -> dict[tuple[str, int], int] | None:
        """Partition sizes from DescribeLogDirs; None when the user may not describe the cluster."""
        answer = await calls.call("DescribeLogDirs", 4, topics=topics)
        if answer["error_code"]:
            return None
        sizes: dict[tuple[str, int], int] = {}
        for result in answer["results"]:
            for topic in result["topics"]:
                for p in topic["partitions"]:
                    if not p["is_future_key"]:
                        sizes[(topic["name"], p["partition_index"])] = p["partition_size"]
        return sizes

    @staticmethod
    async def _offsets(calls: KafkaCalls, partitions: dict[str, list[int]], timestamp: int
                       ) -> dict[tuple[str, int], tuple[int, int]]:
        """(error code, offset) per partition from ListOffsets."""
        if not partitions:
            return {}
        answer = await calls.call("ListOffsets", 8, replica_id=-1, isolation_level=0, topics=[
            {"name": t, "partitions": [{"partition_index": p, "timestamp": timestamp, "current_leader_epoch": -1}
                                       for p in ps]} for t, ps in partitions.items()])
        return {(t["name"], p["partition_index"]): (p["error_code"], p["offset"])
                for t in answer["topics"] for p in t["partitions"]}

    async def _find_coordinator(self, calls: KafkaCalls, group_id: str) -> None:
        """FindCoordinator, as a client asks before its first group request: the first lookup on a
        fresh broker creates __consumer_offsets (COORDINATOR_NOT_AVAILABLE while it loads). In a
        cluster the group's coordinator may be another broker, whose console serves the group."""
        for _ in range(100):
            answer = await calls.call("FindCoordinator", 4, key_type=0, coordinator_keys=[group_id])
            found = answer["coordinators"][0]
            error = ErrorCode(found["error_code"])
            if error not in (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS):
                break
            await asyncio.sleep(0.05)
        check(found["error_code"], f"The coordinator of group {group_id!r}")
        if found["node_id"] != self.broker.node_id:
            raise ApiError(503, "NOT_COORDINATOR", f"Group {group_id!r} is coordinated by broker {found['node_id']} "
                                                   f"({found['host']}:{found['port']}): use that broker's console")

    def _check_writable(self) -> None:
        if self.read_only:
            raise ApiError(403, "READ_ONLY", "The console is read-only (console.read.only=true): "
                                             "it does not create, delete, produce or reset offsets")

    # -- overview -------------------------------------------------------------------------------

    async def overview(self, calls: KafkaCalls) -> dict:
        metadata = await self._metadata(calls, None)
        sizes = await self._sizes(calls, None)
        topics, under_replicated = [], []
        for entry in sorted(metadata["topics"], key=lambda e: e["name"]):
            if entry["error_code"]:
                continue
            name = entry["name"]
            size = None if sizes is None else sum(sizes.get((name, p["partition_index"]), 0)
                                                  for p in entry["partitions"])
            for p in entry["partitions"]:
                if len(p["isr_nodes"]) < len(p["replica_nodes"]):
                    under_replicated.append({"topic": name, "partition": p["partition_index"],
                                             "leader": p["leader_id"], "replicas": p["replica_nodes"],
                                             "isr": p["isr_nodes"]})
            rates = self.sampler.rates(name)
            topics.append({"name": name, "internal": entry["is_internal"], "partitions": len(entry["partitions"]),
                           "size": size, "rate": rates[-1][1] if rates else None, "rates": rates})
        return {"cluster_id": metadata["cluster_id"], "controller": metadata["controller_id"],
                "brokers": [{"id": b["node_id"], "host": b["host"], "port": b["port"], "rack": b["rack"]}
                            for b in metadata["brokers"]],
                "topics": topics, "under_replicated": under_replicated,
                "sample_interval_ms": int(self.sampler.interval * 1000)}

    # -- topics ---------------------------------------------------------------------------------

    async def topic(self, calls: KafkaCalls, topic: str) -> dict:
        entry = await self._topic_metadata(calls, topic)
        numbers = [p["partition_index"] for p in entry["partitions"]]
        starts = await self._offsets(calls, {topic: numbers}, EARLIEST)
        ends = await self._offsets(calls, {topic: numbers}, LATEST)
        sizes = await self._sizes(calls, [{"topic": topic, "partitions": numbers}])
        partitions = []
        for p in sorted(entry["partitions"], key=lambda p: p["partition_index"]):
            n = p["partition_index"]
            start_error, start = starts.get((topic, n), (0, -1))
            end_error, end = ends.get((topic, n), (0, -1))
            partitions.append({"partition": n, "leader": p["leader_id"], "leader_epoch": p["leader_epoch"],
                               "replicas": p["replica_nodes"], "isr": p["isr_nodes"],
                               "start_offset": None if start_error else start,
                               "end_offset": None if end_error else end,
                               "error": ErrorCode(start_error or end_error).name if start_error or end_error else None,
                               "size": None if sizes is None else sizes.get((topic, n))})
        described = await calls.call("DescribeConfigs", 4, include_synonyms=False, include_documentation=True,
                                     resources=[{"resource_type": TOPIC_RESOURCE, "resource_name": topic,
                                                 "configuration_keys": None}])
        result = described["results"][0]
        configs = None
        configs_error = None
        if result["error_code"]:
            configs_error = ErrorCode(result["error_code"]).name
        else:
            configs = [{"name": c["name"], "value": c["value"], "source": CONFIG_SOURCES.get(c["config_source"],
                                                                                               str(c["config_source"])),
                        "sensitive": c["is_sensitive"], "read_only": c["read_only"], "doc": c.get("documentation")}
                       for c in sorted(result["configs"], key=lambda c: c["name"])]
        return {"name": topic, "topic_id": str(entry["topic_id"]), "internal": entry["is_internal"],
                "partitions": partitions, "configs": configs, "configs_error": configs_error,
                "rates": self.sampler.rates(topic)}

    async def messages(self, calls: KafkaCalls, topic: str, query: dict[str, str]) -> dict:
        """A page of records from one partition: from an offset, from a timestamp, or the last
        `limit` (no position given); optionally only those whose key contains `key`. Keys and values
        in the Schema Registry's wire format carry their bytes as `raw`: the caller decodes them
        (RegistryViews.decode_messages), which drops `raw`."""
        partition = _whole_number(query.get("partition"), "partition") or 0
        limit = _whole_number(query.get("limit"), "limit", minimum=1) or 50
        limit = min(limit, MAX_LIMIT)
        offset = _whole_number(query.get("offset"), "offset")
        timestamp = parse_timestamp(query["timestamp"]) if query.get("timestamp") else None
        key_search = query.get("key") or None
        entry = await self._topic_metadata(calls, topic)
        if partition not in {p["partition_index"] for p in entry["partitions"]}:
            raise ApiError(404, "UNKNOWN_TOPIC_OR_PARTITION",
                           f"Topic {topic!r} has no partition {partition} (it has {len(entry['partitions'])})")
        bounds = await self._offsets(calls, {topic: [partition]}, EARLIEST)
        start_error, start_offset = bounds[(topic, partition)]
        ends = await self._offsets(calls, {topic: [partition]}, LATEST)
        end_error, end_offset = ends[(topic, partition)]
        if start_error or end_error:
            raise from_kafka(KafkaError(start_error or end_error, f"{topic}-{partition}"))
        if timestamp is not None:
            found = await self._offsets(calls, {topic: [partition]}, timestamp)
            error, position = found[(topic, partition)]
            check(error, f"{topic}-{partition}")
            position = end_offset if position < 0 else position
        elif offset is not None:
            position = offset
            if offset > end_offset:
                held = (f"its offsets run from {start_offset} to {end_offset - 1}" if end_offset > start_offset
                        else "it holds no records")
                raise ApiError(416, "OFFSET_OUT_OF_RANGE",
                               f"Offset {offset} is past the end of {topic}-{partition}: {held} "
                               f"(log end offset {end_offset})")
            if offset < start_offset:
                raise ApiError(416, "OFFSET_OUT_OF_RANGE",
                               f"Offset {offset} is before the start of {topic}-{partition}: the earliest "
                               f"offset still in the log is {start_offset}")
        else:
            position = max(start_offset, end_offset - limit) if key_search is None else start_offset
        found_records: list[dict] = []
        next_offset = position
        reads = 0
        page_bytes = 0
        while (next_offset < end_offset and len(found_records) < limit and reads < MAX_READS
               and page_bytes < PAGE_BYTES):
            reads += 1
            answer = await calls.call("Fetch", 12, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=FETCH_BYTES,
                                      isolation_level=0, session_id=0, session_epoch=-1, rack_id="",
                                      topics=[{"topic": topic, "partitions": [
                                          {"partition": partition, "fetch_offset": next_offset,
                                           "partition_max_bytes": FETCH_BYTES, "current_leader_epoch": -1,
                                           "log_start_offset": -1, "last_fetched_epoch": -1}]}])
            if answer["error_code"]:
                raise from_kafka(KafkaError(answer["error_code"], f"Fetch {topic}-{partition}"))
            fetched = answer["responses"][0]["partitions"][0]
            if fetched["error_code"]:
                _read_slice(fetched["records"])
                raise from_kafka(KafkaError(fetched["error_code"], f"{topic}-{partition} at offset {next_offset}"))
            # Reading the file and decoding (maybe decompressing) run on a worker thread.
            start = next_offset
            try:
                decoded = await asyncio.to_thread(lambda r=fetched["records"]: _decode_fetched(_read_slice(r), start))
            except InvalidRecordBatch as exc:
                raise ApiError(500, "CORRUPT_MESSAGE", f"{topic}-{partition} at offset {start} cannot be "
                                                       f"decoded: {exc}") from None
            if not decoded:
                break
            next_offset = decoded[-1]["offset"] + 1
            for record in decoded:
                if key_search is not None and (record["key"] is None or record["key"]["text"] is None
                                               or key_search not in record["key"]["text"]):
                    continue
                found_records.append(record)
                page_bytes += sum(len(f["base64"]) for f in [record["key"], record["value"]]
                                  + [h["value"] for h in record["headers"]] if f is not None)
                if len(found_records) >= limit or page_bytes >= PAGE_BYTES:
                    next_offset = record["offset"] + 1
                    break
        return {"topic": topic, "partition": partition, "start_offset": start_offset, "end_offset": end_offset,
                "position": position, "next_offset": next_offset, "messages": found_records,
                "key": key_search, "scanned_to_end": next_offset >= end_offset}

    async def create_topic(self, calls: KafkaCalls, body: dict) -> dict:
        self._check_writable()
        name = body.get("name")
        if not isinstance(name, str) or not name:
            raise bad_request("A topic needs a name")
        try:
            partitions = int(body.get("partitions", -1))
            replication = int(body.get("replication_factor", -1))
        except (TypeError, ValueError):
            raise bad_request("partitions and replication_factor must be whole numbers") from None
        configs = body.get("configs") or {}
        if not isinstance(configs, dict):
            raise bad_request("configs must be an object of config names to values")
        answer = await calls.call("CreateTopics", 7, timeout_ms=30000, validate_only=False, topics=[
            {"name": name, "num_partitions": partitions, "replication_factor": replication, "assignments": [],
             "configs": [{"name": k, "value": None if v is None else str(v)} for k, v in configs.items()]}])
        result = answer["topics"][0]
        if result["error_code"]:
            raise ApiError(http_status(ErrorCode(result["error_code"])), ErrorCode(result["error_code"]).name,
                           result["error_message"] or ErrorCode(result["error_code"]).name)
        return {"name": name, "partitions": result["num_partitions"],
                "replication_factor": result["replication_factor"]}

    async def delete_topic(self, calls: KafkaCalls, topic: str) -> dict:
        self._check_writable()
        answer = await calls.call("DeleteTopics", 6, timeout_ms=30000, topics=[{"name": topic}])
        result = answer["responses"][0]
        if result["error_code"]:
            error = ErrorCode(result["error_code"])
            raise ApiError(http_status(error), error.name, result["error_message"] or error.name)
        return {"deleted": topic}

    async def produce(self, calls: KafkaCalls, topic: str, body: dict) -> dict:
        self._check_writable()
        try:
            partition = int(body.get("partition", 0))
        except (TypeError, ValueError):
            raise bad_request("partition must be a whole number") from None
        key, value = body.get("key"), body.get("value")
        headers = body.get("headers") or {}
        if not isinstance(headers, dict):
            raise bad_request("headers must be an object of names to values")
        record = Record(0, 0, None if key is None else str(key).encode(),
                        None if value is None else str(value).encode(),
                        [(str(k), None if v is None else str(v).encode()) for k, v in headers.items()])
        answer = await calls.call("Produce", 9, transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[
            {"name": topic, "partition_data": [{"index": partition, "records": build_batch([record])}]}])
        result = answer["responses"][0]["partition_responses"][0]
        if result["error_code"]:
            error = ErrorCode(result["error_code"])
            raise ApiError(http_status(error), error.name, result.get("error_message") or
                           f"Producing to {topic}-{partition}: {error.name}")
        return {"topic": topic, "partition": partition, "offset": result["base_offset"]}

    # -- consumer groups ------------------------------------------------------------------------

    async def groups(self, calls: KafkaCalls) -> dict:
        answer = await calls.call("ListGroups", 5, states_filter=[], types_filter=[])
        if answer["error_code"]:
            raise from_kafka(KafkaError(answer["error_code"], "ListGroups"))
        groups = []
        for g in sorted(answer["groups"], key=lambda g: g["group_id"]):
            history = self.sampler.lag(g["group_id"])
            groups.append({"group_id": g["group_id"], "state": g["group_state"], "type": g["group_type"],
                           "protocol_type": g["protocol_type"], "lag": history[-1]["lag"] if history else None})
        return {"groups": groups}

    async def group(self, calls: KafkaCalls, group_id: str) -> dict:
        listed = await calls.call("ListGroups", 5, states_filter=[], types_filter=[])
        if listed["error_code"]:
            raise from_kafka(KafkaError(listed["error_code"], "ListGroups"))
        kinds = {g["group_id"]: g["group_type"] for g in listed["groups"]}
        if group_id not in kinds:
            # Groups with members or committed offsets are listed, in any state but Dead.
            raise ApiError(404, "GROUP_ID_NOT_FOUND", f"Group {group_id!r} does not exist")
        if kinds.get(group_id) == "share":
            return await self._share_group(calls, group_id)
        members, state, protocol_type, protocol = [], None, None, None
        if kinds.get(group_id) == "consumer":
            g = await _describe_one(calls, "ConsumerGroupDescribe", 1, group_id)
            state, protocol_type, protocol = g["group_state"], "consumer", g.get("assignor_name")
            for m in g["members"]:
                members.append({"member_id": m["member_id"], "instance_id": m.get("instance_id"),
                                "client_id": m["client_id"], "host": m["client_host"], "assignment": _assigned(m)})
        elif kinds.get(group_id) == "streams":
            # A KIP-1071 streams group: its members' active tasks, shown as the partitions of the
            # subtopologies' source topics they read.
            g = await _describe_one(calls, "StreamsGroupDescribe", 0, group_id)
            state, protocol_type, protocol = g["group_state"], "streams", None
            sources = {s["subtopology_id"]: list(s["source_topics"]) + [t["name"] for t in s["repartition_source_topics"]]
                       for s in (g.get("topology") or {}).get("subtopologies") or []}
            for m in g["members"]:
                read: dict[str, set[int]] = {}
                for task in m["assignment"]["active_tasks"]:
                    for topic in sources.get(task["subtopology_id"], []):
                        read.setdefault(topic, set()).update(task["partitions"])
                members.append({"member_id": m["member_id"], "instance_id": m.get("instance_id"),
                                "client_id": m["client_id"], "host": m["client_host"],
                                "assignment": [{"topic": t, "partitions": sorted(ps)} for t, ps in sorted(read.items())]})
        else:
            described = await calls.call("DescribeGroups", 5, groups=[group_id], include_authorized_operations=False)
            g = described["groups"][0]
            if g["error_code"]:
                raise from_kafka(KafkaError(g["error_code"], f"Group {group_id!r}"))
            state, protocol_type, protocol = g["group_state"], g["protocol_type"], g["protocol_data"]
            for m in g["members"]:
                assignment = None
                if protocol_type == "consumer" and m["member_assignment"]:
                    try:
                        assignment = [{"topic": t, "partitions": sorted(ps)}
                                      for t, ps in assigned_partitions(m["member_assignment"]) or []]
                    except Exception:
                        assignment = None
                members.append({"member_id": m["member_id"], "instance_id": m["group_instance_id"],
                                "client_id": m["client_id"], "host": m["client_host"], "assignment": assignment})
        fetched = await calls.call("OffsetFetch", 8, require_stable=False,
                                   groups=[{"group_id": group_id, "topics": None}])
        fg = fetched["groups"][0]
        if fg["error_code"]:
            raise from_kafka(KafkaError(fg["error_code"], f"Offsets of group {group_id!r}"))
        committed = {(t["name"], p["partition_index"]): p["committed_offset"]
                     for t in fg["topics"] for p in t["partitions"] if not p["error_code"]}
        by_topic: dict[str, list[int]] = {}
        for t, p in committed:
            by_topic.setdefault(t, []).append(p)
        ends = await self._offsets(calls, by_topic, LATEST)
        offsets = []
        for (t, p), offset in sorted(committed.items()):
            end_error, end = ends.get((t, p), (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1))
            lag = None if end_error or offset < 0 else max(end - offset, 0)
            offsets.append({"topic": t, "partition": p, "committed": offset,
                            "end_offset": None if end_error else end, "lag": lag})
        return {"group_id": group_id, "state": state, "protocol_type": protocol_type, "protocol": protocol,
                "members": members, "offsets": offsets,
                "lag_total": sum(o["lag"] for o in offsets if o["lag"] is not None),
                "lag_history": self.sampler.lag(group_id),
                "sample_interval_ms": int(self.sampler.interval * 1000)}

    async def _share_group(self, calls: KafkaCalls, group_id: str) -> dict:
        """A share group (KIP-932), as kafka-share-groups --describe --members / --offsets shows it:
        members and their assignments (ShareGroupDescribe), and per share-partition its start
        offset and lag (DescribeShareGroupOffsets), the partition's end offset and how many of
        its records are in flight (acquired by a consumer, or released and awaiting redelivery)."""
        g = await _describe_one(calls, "ShareGroupDescribe", 1, group_id)
        members = [{"member_id": m["member_id"], "instance_id": None, "client_id": m["client_id"],
                    "host": m["client_host"], "member_epoch": m["member_epoch"], "assignment": _assigned(m)}
                   for m in g["members"]]
        fetched = await calls.call("DescribeShareGroupOffsets", 1, groups=[{"group_id": group_id, "topics": None}])
        fg = fetched["groups"][0]
        if fg["error_code"]:
            raise from_kafka(KafkaError(fg["error_code"], fg.get("error_message") or f"Offsets of group {group_id!r}"))
        starts = {(t["topic_name"], p["partition_index"]): p for t in fg["topics"] for p in t["partitions"]
                  if not p["error_code"]}
        by_topic: dict[str, list[int]] = {}
        for t, p in starts:
            by_topic.setdefault(t, []).append(p)
        ends = await self._offsets(calls, by_topic, LATEST)
        in_flight = share_records_in_flight(self.broker, group_id)
        offsets = []
        for (t, p), found in sorted(starts.items()):
            end_error, end = ends.get((t, p), (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1))
            lag = found["lag"] if found["lag"] >= 0 else None
            offsets.append({"topic": t, "partition": p, "start_offset": found["start_offset"],
                            "end_offset": None if end_error else end, "lag": lag,
                            "in_flight": in_flight.get((t, p))})
        return {"group_id": group_id, "state": g["group_state"], "protocol_type": "share",
                "protocol": g["assignor_name"], "members": members, "offsets": offsets,
                "lag_total": sum(o["lag"] for o in offsets if o["lag"] is not None),
                "lag_history": self.sampler.lag(group_id),
                "sample_interval_ms": int(self.sampler.interval * 1000)}

    async def reset_offsets(self, calls: KafkaCalls, group_id: str, body: dict) -> dict:
        """Kafka's kafka-consumer-groups --reset-offsets: an OffsetCommit outside any generation
        (which the coordinator refuses while the group has members)."""
        self._check_writable()
        topic = body.get("topic")
        if not isinstance(topic, str) or not topic:
            raise bad_request("Name the topic whose offsets to reset")
        to = body.get("to", "earliest")
        entry = await self._topic_metadata(calls, topic)
        partitions = sorted(p["partition_index"] for p in entry["partitions"])
        if body.get("partition") not in (None, ""):
            wanted = _whole_number(str(body["partition"]), "partition")
            if wanted not in partitions:
                raise ApiError(404, "UNKNOWN_TOPIC_OR_PARTITION", f"Topic {topic!r} has no partition {wanted}")
            partitions = [wanted]
        if to in ("earliest", "latest"):
            found = await self._offsets(calls, {topic: partitions}, EARLIEST if to == "earliest" else LATEST)
        elif to == "timestamp":
            found = await self._offsets(calls, {topic: partitions}, parse_timestamp(str(body.get("timestamp", ""))))
            ends = await self._offsets(calls, {topic: partitions}, LATEST)
            found = {tp: (e, o if o >= 0 else ends[tp][1]) for tp, (e, o) in found.items()}
        elif to == "offset":
            target = _whole_number(str(body.get("offset", "")), "offset")
            if target is None:
                raise bad_request("Give the offset to reset to")
            # As kafka-consumer-groups --to-offset: kept within each partition's log.
            starts = await self._offsets(calls, {topic: partitions}, EARLIEST)
            ends = await self._offsets(calls, {topic: partitions}, LATEST)
            found = {(topic, p): (starts[(topic, p)][0] or ends[(topic, p)][0],
                                  min(max(target, starts[(topic, p)][1]), ends[(topic, p)][1])) for p in partitions}
        else:
            raise bad_request(f"Reset to earliest, latest, timestamp or offset, not {to!r}")
        for (t, p), (error, _) in found.items():
            check(error, f"{t}-{p}")
        await self._find_coordinator(calls, group_id)
        answer = await calls.call("OffsetCommit", 8, group_id=group_id, generation_id_or_member_epoch=-1,
                                  member_id="", group_instance_id=None, topics=[
                                      {"name": topic, "partitions": [
                                          {"partition_index": p, "committed_offset": found[(topic, p)][1],
                                           "committed_leader_epoch": -1, "committed_metadata": ""}
                                          for p in partitions]}])
        if answer.get("error_code"):
            raise from_kafka(KafkaError(answer["error_code"], f"Group {group_id!r}"))
        for t in answer["topics"]:
            for p in t["partitions"]:
                if p["error_code"]:
                    error = ErrorCode(p["error_code"])
                    message = f"Resetting {group_id!r} on {t['name']}-{p['partition_index']}: {error.name}"
                    if error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
                        message += " (the group has active members: stop them first, as kafka-consumer-groups asks)"
                    raise ApiError(http_status(error), error.name, message)
        return {"group_id": group_id, "topic": topic,
                "offsets": [{"partition": p, "offset": found[(topic, p)][1]} for p in partitions]}


async def _describe_one(calls: KafkaCalls, api: str, version: int, group_id: str) -> dict:
    """One group from ConsumerGroupDescribe, ShareGroupDescribe or StreamsGroupDescribe; its error
    code as the console's error answer."""
    described = await calls.call(api, version, group_ids=[group_id], include_authorized_operations=False)
    g = described["groups"][0]
    if g["error_code"]:
        raise from_kafka(KafkaError(g["error_code"], g.get("error_message") or f"Group {group_id!r}"))
    return g


def _assigned(member: dict) -> list[dict]:
    """A described member's assignment (consumer and share groups): topics and sorted partitions."""
    return [{"topic": tp["topic_name"], "partitions": sorted(tp["partitions"])}
            for tp in (member.get("assignment") or {}).get("topic_partitions", [])]


def to_json(value) -> bytes:
    return json.dumps(value, default=str, separators=(",", ":")).encode()
