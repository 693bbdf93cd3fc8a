"""registry/rules.py: rule sets read, checked and merged as Confluent's Schema Registry does, and
their records in `_schemas` (a rule set on a SCHEMA record, the data-contract fields of a CONFIG
record) replayed into the state, with the rule set part of the GUID."""

from __future__ import annotations

import hashlib
import json
import uuid

import pytest

from registry.rules import InvalidRuleSet, merge_metadata, merge_rule_sets, rule_set_arg, with_confluent_version
from registry.store import RegistryState, SchemaVersion, config_key, config_value, schema_key, schema_value


def rule(name, **fields):
    return {"name": name, "type": "CEL", **fields}


def test_a_rule_is_kept_as_confluent_keeps_it():
    kept = rule_set_arg({"domainRules": [rule("r", tags=["b", "a", "b"], params={"z": "1", "y": "2"},
                                              expr="true", onSuccess=None, unknown="dropped")],
                         "migrationRules": [], "enableAt": "CLIENT"})
    assert kept == {"domainRules": [{"name": "r", "kind": "TRANSFORM", "mode": "WRITEREAD", "type": "CEL",
                                     "tags": ["a", "b"], "params": {"y": "2", "z": "1"}, "expr": "true",
                                     "disabled": False}], "enableAt": "CLIENT"}
    assert list(kept["domainRules"][0]["params"]) == ["y", "z"]
    assert rule_set_arg(None) is None
    assert rule_set_arg({}) == {}


@pytest.mark.parametrize("rule_set, message", [
    ({"domainRules": [rule("a"), rule("a")]}, "duplicate name 'a'"),
    ({"domainRules": [rule("a")], "migrationRules": [rule("a", mode="UPGRADE")]}, "duplicate name 'a'"),
    ({"domainRules": [{"name": "a"}]}, "Missing rule type"),
    ({"domainRules": [{"type": "CEL"}]}, "Missing rule name"),
    ({"domainRules": [rule("")]}, "Empty rule name"),
    ({"domainRules": [rule("x" * 257)]}, "Rule name too long"),
    ({"domainRules": [rule("-a")]}, "Illegal initial character"),
    ({"domainRules": [rule("a b")]}, "Illegal character"),
    ({"migrationRules": [rule("a")]}, "Migration rules can only be UPGRADE, DOWNGRADE, UPDOWN"),
    ({"domainRules": [rule("a", mode="UPDOWN")]}, "Domain rules can only be WRITE, READ, WRITEREAD"),
    ({"encodingRules": [rule("a", mode="UPGRADE")]}, "Encoding rules can only be WRITE, READ, WRITEREAD"),
    ({"domainRules": [rule("a", mode="READ", onFailure="ERROR,NONE")]}, "Multiple actions only valid"),
])
def test_rule_sets_confluent_refuses(rule_set, message):
    with pytest.raises(InvalidRuleSet, match=message) as refused:
        rule_set_arg(rule_set)
    assert not refused.value.unreadable


def test_names_and_actions_confluent_takes():
    rule_set_arg({"domainRules": [rule("_a-1"), rule("x" * 256), rule("c", onFailure="ERROR,NONE")],
                  "migrationRules": [rule("d", mode="UPDOWN", onSuccess="NONE,ERROR")]})


@pytest.mark.parametrize("rule_set", [
    [], {"domainRules": {}}, {"domainRules": [1]}, {"domainRules": [rule("a", kind="MAYBE")]},
    {"domainRules": [rule("a", mode="SOMETIMES")]}, {"domainRules": [rule("a", tags="t")]},
    {"domainRules": [rule("a", params={"k": 1})]}, {"domainRules": [rule("a", disabled="no")]},
    {"domainRules": [rule("a", expr=7)]}, {"enableAt": "LATER"},
])
def test_rule_sets_that_cannot_be_read(rule_set):
    with pytest.raises(InvalidRuleSet) as refused:
        rule_set_arg(rule_set)
    assert refused.value.unreadable


def test_merging_as_confluent_merges():
    old = rule_set_arg({"domainRules": [rule("a"), rule("b", expr="old")], "enableAt": "ALL"})
    new = rule_set_arg({"domainRules": [rule("b", expr="new"), rule("c")], "migrationRules": [rule("m", mode="UPGRADE")]})
    merged = merge_rule_sets(old, new)
    assert [(r["name"], r.get("expr")) for r in merged["domainRules"]] == [("a", None), ("b", "new"), ("c", None)]
    assert [r["name"] for r in merged["migrationRules"]] == ["m"] and merged["enableAt"] == "ALL"
    assert merge_rule_sets(None, new) is new and merge_rule_sets(old, None) is old

    metadata = merge_metadata({"tags": {"f": ["a"]}, "properties": {"k": "1", "j": "2"}, "sensitive": ["s"]},
                              {"tags": {"f": ["b"], "g": ["c"]}, "properties": {"k": "3"}, "sensitive": ["r"]})
    assert metadata == {"tags": {"f": ["b"], "g": ["c"]}, "properties": {"j": "2", "k": "3"}, "sensitive": ["r", "s"]}
    assert with_confluent_version(None, 3) == {"properties": {"confluent:version": "3"}}
    assert with_confluent_version({"properties": {"confluent:version": "1", "a": "b"}}, 4) == {
        "properties": {"a": "b", "confluent:version": "4"}}


def test_the_rule_set_is_part_of_the_guid():
    rules = rule_set_arg({"domainRules": [rule("a", tags=["t"], params={"k": "v"}, expr="e", onFailure="ERROR",
                                               disabled=True)], "enableAt": "CLIENT"})
    entry = SchemaVersion("s", 1, 1, '"string"', "AVRO", rule_set=rules)
    digest = hashlib.md5(b'"string"')
    for part in (b"\x01", b"a", b"TRANSFORM", b"WRITEREAD", b"CEL", b"t", b"k", b"v", b"e", b"ERROR", b"\x01",
                 b"CLIENT"):
        digest.update(part)
    assert entry.guid == str(uuid.UUID(bytes=digest.digest()))
    assert entry.guid != SchemaVersion("s", 1, 1, '"string"', "AVRO").guid


def test_rule_sets_and_config_contracts_are_replayed_from_the_log():
    rules = rule_set_arg({"domainRules": [rule("a")]})
    state = RegistryState()
    state.apply(schema_key("s", 1), schema_value(SchemaVersion("s", 1, 1, '"string"', "AVRO", rule_set=rules)))
    assert json.loads(schema_value(state.versions("s")[0]))["ruleSet"] == rules
    assert state.versions("s")[0].rule_set == rules

    contracts = {"defaultMetadata": {"properties": {"o": "p"}}, "overrideRuleSet": rules}
    state.apply(config_key("s"), config_value(None, None, contracts))
    assert state.contracts["s"] == contracts and "s" not in state.configs
    assert state.contracts_in_scope("s") == contracts
    # Another subject without a config record gets the global one's; a subject record alone counts
    state.apply(config_key(None), config_value("FULL", None, {"defaultMetadata": {"properties": {"g": "1"}}}))
    assert state.contracts_in_scope("t") == {"defaultMetadata": {"properties": {"g": "1"}}}
    state.apply(config_key("u"), config_value("NONE"))
    assert state.contracts_in_scope("u") == {}
    assert state.contracts_in_scope(":.ctx:v") == {"defaultMetadata": {"properties": {"g": "1"}}}
    state.apply(config_key(":.ctx:"), config_value(None, None, {"overrideMetadata": {"properties": {"c": "2"}}}))
    assert state.contracts_in_scope(":.ctx:v") == {"overrideMetadata": {"properties": {"c": "2"}}}
    # A config record replaces the one before; a tombstone removes it
    state.apply(config_key("s"), config_value("NONE"))
    assert "s" not in state.contracts
    state.apply(config_key(":.ctx:"), None)
    assert ":.ctx:" not in state.contracts
    # A record whose rule set cannot be read keeps the rest
    state.apply(schema_key("w", 1), json.dumps({"subject": "w", "version": 1, "id": 2, "schema": '"int"',
                                                "ruleSet": {"domainRules": "x"}, "deleted": False}).encode())
    assert state.versions("w")[0].rule_set is None
