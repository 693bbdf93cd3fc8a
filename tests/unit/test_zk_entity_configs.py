"""Kafka's ZooKeeper layout of dynamic broker configs and client quotas (broker/cluster/zk_entity_configs.py)."""

from __future__ import annotations

import json

import pytest

from broker.cluster.zk_entity_configs import (
    broker_config_path,
    broker_of_path,
    change_notification,
    change_sequence,
    desanitize,
    entity_config_znode,
    notified_entity_path,
    parse_entity_config,
    parse_quotas,
    quota_entity_of_path,
    quota_entity_path,
    render_quota,
    sanitize,
)
from broker.client_quotas import entity_key


@pytest.mark.parametrize("name, sanitized", [
    ("alice", "alice"), ("User:CN=a b", "User%3ACN%3Da%20b"), ("a*b", "a%2Ab"), ("x~y", "x%7Ey"),
    ("a.b-c_d", "a.b-c_d"), ("é", "%C3%A9"),
])
def test_sanitize_as_kafkas_sanitizer(name, sanitized):
    assert sanitize(name) == sanitized
    assert desanitize(sanitized) == name


@pytest.mark.parametrize("parts, path", [
    ([("user", "alice")], "users/alice"),
    ([("user", None)], "users/<default>"),
    ([("client-id", "app 1")], "clients/app%201"),
    ([("client-id", None), ("user", "bob")], "users/bob/clients/<default>"),
    ([("user", None), ("client-id", None)], "users/<default>/clients/<default>"),
    ([("ip", "10.0.0.1")], "ips/10.0.0.1"),
    ([("ip", None)], "ips/<default>"),
    ([("ip", "::1")], "ips/%3A%3A1"),
])
def test_quota_entity_paths_round_trip(parts, path):
    entity = entity_key(parts)
    assert quota_entity_path(entity) == path
    assert quota_entity_of_path(path) == entity


def test_paths_without_a_quota_entity():
    assert quota_entity_path(entity_key([("user", "")])) is None
    assert quota_entity_path(entity_key([("ip", "1.2.3.4"), ("user", "a")])) is None
    assert quota_entity_of_path("topics/orders") is None
    assert quota_entity_of_path("brokers/<default>") is None


def test_broker_paths():
    assert broker_config_path("") == "/config/brokers/<default>"
    assert broker_config_path("2") == "/config/brokers/2"
    assert broker_of_path("brokers/<default>") == ""
    assert broker_of_path("brokers/2") == "2"
    assert broker_of_path("users/alice") is None


def test_znodes_as_kafka_writes_them():
    assert json.loads(entity_config_znode({"b": "2", "a": "1"})) == {"version": 1, "config": {"a": "1", "b": "2"}}
    assert parse_entity_config(b"") == {}
    stored = b'{"version":1,"config":{"producer_byte_rate":"1024"}}'
    assert parse_entity_config(stored) == {"producer_byte_rate": "1024"}
    assert render_quota("producer_byte_rate", 1024.0) == "1024"
    assert render_quota("request_percentage", 12.5) == "12.5"
    assert render_quota("connection_creation_rate", 3.0) == "3"
    assert parse_quotas({"producer_byte_rate": "1024", "bad": "x"}) == {"producer_byte_rate": 1024.0}


def test_change_notifications():
    assert json.loads(change_notification("users/alice")) == {"version": 2, "entity_path": "users/alice"}
    assert notified_entity_path(change_notification("brokers/<default>")) == "brokers/<default>"
    assert notified_entity_path(b'{"version":1,"entity_type":"topics","entity_name":"t"}') == "topics/t"
    assert notified_entity_path(b"not json") is None
    assert change_sequence("config_change_0000000012") == 12
    assert change_sequence("other") is None
