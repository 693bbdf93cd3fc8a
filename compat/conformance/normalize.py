"""The fields that legitimately differ between two brokers, in one declared table, each with its reason.

Everything not named here is compared exactly. Three ways of normalising:

- SAME: the value is replaced by a placeholder numbered in order of first appearance in the case's
  transcript (`<topic_id#1>`), so what must be equal stays equal (the topic id Metadata gave is the
  one Fetch names) while the random values themselves are not compared.
- SET: the value is replaced by `<set>`: only that it is there is compared (not -1, not null).
- TEXT: free text for people: whether there is any is compared, not the wording.

Sentinel values (null, -1, and for SET/TEXT an empty string) are kept: "no producer id" must stay
-1 on both sides. Record batches (a `records` field's bytes) are decoded first, so their headers
and records are compared field by field like the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

SAME, SET, TEXT = "same", "set", "text"
SENTINELS = (None, -1)


@dataclass(frozen=True)
class Rule:
    field: str
    mode: str
    reason: str
    apis: tuple[str, ...] = ()  # only in these APIs' answers (empty: everywhere)
    same_as: str | None = None  # SAME: shares the placeholders of this field (the same kind of id)
    not_apis: tuple[str, ...] = ()  # never in these APIs' answers (where the name means something else)


NORMALISED: tuple[Rule, ...] = (
    Rule("cluster_id", SAME, "a cluster id is random: chosen at `kafka-storage format` (Kafka) or first start (kafka-wire)"),
    Rule("host", SAME, "each broker listens on its own address (an ACL's host is the client's choice, compared)",
         not_apis=("DescribeAcls", "DeleteAcls")),
    Rule("port", SAME, "each broker listens on its own (free, random) port"),
    Rule("topic_id", SAME, "topic ids are random UUIDs (KIP-516)"),
    Rule("producer_id", SAME, "each cluster allocates producer ids its own way (Kafka: blocks of 1000 from the "
                              "controller); what matters is which answers share one"),
    Rule("member_id", SAME, "member ids are the client id and a random UUID (KIP-394)"),
    Rule("leader", SAME, "the leader of a classic group is one of its member ids (random, as member_id)",
         ("JoinGroup",), same_as="member_id"),
    Rule("leader_id", SAME, "a broker id is configuration: both are node 1 here, but Kafka's KRaft voter and "
                            "ours could differ; equality with other ids is what a client relies on",
         ("DescribeQuorum",)),
    Rule("session_id", SAME, "fetch session ids are random (KIP-227)"),
    Rule("throttle_time_ms", SET, "throttling depends on quotas and load at that moment"),
    Rule("log_append_time_ms", SET, "the broker's clock at append time"),
    Rule("crc", SET, "a batch's CRC covers its producer id and append-time timestamps, which differ by the rows above"),
    Rule("error_message", TEXT, "free text for people: clients show it, none parse it; its presence is compared"),
    Rule("batch_index_error_message", TEXT, "free text for people, per record (Produce v8+); Kafka's "
                                            "INVALID_TIMESTAMP text embeds the broker's clock"),
    Rule("documentation", TEXT, "config documentation strings (DescribeConfigs v3+) are prose"),
    Rule("log_dir", SAME, "each broker's data directory is its own path", ("DescribeLogDirs", "AlterReplicaLogDirs")),
    Rule("path", SAME, "each broker's data directory is its own path", ("DescribeLogDirs",)),
    Rule("total_bytes", SET, "the size of the disk each broker's log dir is on", ("DescribeLogDirs",)),
    Rule("usable_bytes", SET, "the free space of the disk each broker's log dir is on", ("DescribeLogDirs",)),
    Rule("finalized_features_epoch", SET, "Kafka's is the offset of the last feature record in its metadata log"),
    Rule("transaction_start_time_ms", SET, "the broker's clock when the transaction began"),
    Rule("last_timestamp", SET, "the broker's clock (DescribeProducers: when the producer last wrote)",
         ("DescribeProducers",)),
    Rule("current_txn_start_offset", SAME, "follows offsets already compared; kept consistent",
         ("DescribeProducers",)),
    Rule("client_host", SAME, "the client's address as each broker saw it"),
    Rule("incarnation_id", SAME, "random per broker start"),
    Rule("broker_epoch", SET, "Kafka's is the offset of its registration in the metadata log"),
)

# Lists whose order carries meaning: never sorted before comparing. Other lists of structures are
# sorted (Kafka builds many answers from hash maps: clients match entries by name, not position).
ORDERED_LISTS = frozenset({"batches", "records", "headers", "aborted_transactions", "api_keys", "steps",
                           "protocols", "assignment", "members_in_order", "partition_ids", "replica_nodes",
                           "isr_nodes"})


# Lists of entries with a natural key, compared as maps from that key (a missing or extra entry is
# one difference named by its key, not a shift of every entry after it).
KEYED_LISTS = {"api_keys": "api_key", "supported_features": "name", "finalized_features": "name",
               "configs": "name", "topics": "name", "partitions": "partition_index"}


def _keyed(field: str | None, items: list):
    key = KEYED_LISTS.get(field)
    if key is None or not all(isinstance(i, dict) and key in i for i in items):
        return None
    keys = [i[key] for i in items]
    if len(set(keys)) != len(keys):
        return None
    return {str(i[key]): {k: v for k, v in i.items() if k != key} for i in items}


def _rules_for(api: str | None) -> dict[str, Rule]:
    return {rule.field: rule for rule in NORMALISED
            if (not rule.apis or (api and api in rule.apis)) and api not in rule.not_apis}


def decode_records_field(value):
    """A `records` field's bytes ({"bytes": hex}) as a list of batches, each with its records."""
    if not (isinstance(value, dict) and set(value) == {"bytes"}):
        return value
    from kafka_wire.record_codec import decode_batches

    data = bytes.fromhex(value["bytes"])
    batches = []
    try:
        for header, records in decode_batches(data):
            batch = {name: getattr(header, name) for name in header.__dataclass_fields__}
            batch["records"] = [{"offset_delta": r.offset_delta, "timestamp_delta": r.timestamp_delta,
                                 "key": _text(r.key), "value": _text(r.value),
                                 "headers": [[k, _text(v)] for k, v in r.headers]} for r in records]
            batches.append(batch)
    except Exception as error:  # a batch we cannot read is itself worth comparing
        return {"undecodable": f"{type(error).__name__}: {error}", "size": len(data)}
    return {"batches": batches}


def _text(data: bytes | None):
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"hex": data.hex()}


class Normaliser:
    """Normalises one side's transcript of one case (placeholders numbered across its steps)."""

    def __init__(self):
        self.seen: dict[tuple[str, object], str] = {}
        self.counters: dict[str, int] = {}

    def placeholder(self, field: str, value) -> str:
        key = (field, repr(value))
        if key not in self.seen:
            self.counters[field] = self.counters.get(field, 0) + 1
            self.seen[key] = f"<{field}#{self.counters[field]}>"
        return self.seen[key]

    def step(self, api: str | None, answer):
        return self._value(answer, _rules_for(api), None)

    def _value(self, value, rules: dict[str, Rule], field: str | None):
        if field == "records":
            value = decode_records_field(value)
        rule = rules.get(field) if field else None
        if rule is not None and not isinstance(value, (dict, list)):
            return self._apply(rule, value)
        if isinstance(value, dict):
            return {key: self._value(inner, rules, key) for key, inner in value.items()}
        if isinstance(value, list):
            if field not in ORDERED_LISTS and value and all(isinstance(i, (dict, list)) for i in value):
                # Placeholders are numbered in order of appearance: visit the entries in an order that
                # does not depend on the normalised values themselves, so both sides number alike.
                value = sorted(value, key=lambda item: _sort_key(_masked(item, rules, field)))
            items = [self._value(inner, rules, field) for inner in value]
            keyed = _keyed(field, items)
            if keyed is not None:
                return keyed
            if field not in ORDERED_LISTS and items and all(isinstance(i, (dict, list)) for i in items):
                items.sort(key=_sort_key)
            return items
        return value

    def _apply(self, rule: Rule, value):
        if value in SENTINELS:
            return value
        if rule.mode == SAME:
            return self.placeholder(rule.same_as or rule.field, value)
        if rule.mode == SET:
            return "<set>"
        if rule.mode == TEXT:
            return "<text>" if value else value
        raise ValueError(rule.mode)


def _masked(value, rules: dict[str, Rule], field: str | None = None):
    """`value` with every normalised field's value blanked and its unordered lists sorted: a sort
    key that depends neither on the normalised values nor on the order a broker listed things in."""
    if isinstance(value, dict):
        return {k: ("" if k in rules and not isinstance(v, (dict, list)) else _masked(v, rules, k))
                for k, v in value.items()}
    if isinstance(value, list):
        items = [_masked(v, rules, field) for v in value]
        return items if field in ORDERED_LISTS else sorted(items, key=_sort_key)
    return value


def _sort_key(item) -> str:
    import json

    return json.dumps(item, sort_keys=True, default=str)


def normalise_transcript(steps: list[dict]) -> list[dict]:
    """[{label, api, version, answer}] -> the same with each answer normalised."""
    normaliser = Normaliser()
    return [dict(step, answer=normaliser.step(step.get("api"), step["answer"])) for step in steps]
