"""Both metadata stores stand behind one declared seam (broker/metadata.py: MetadataStore) and
answer its queries with the same shared code."""

from __future__ import annotations

import inspect
import uuid

import pytest

from broker.cluster.zk_metadata import NO_LEADER, LeaderAndIsr, ZkMetadata
from broker.config import ConfigError
from broker.metadata import MetadataStore, PartitionState, TopicMeta, random_topic_id, topic_names_of
from broker.metadata_store import EmbeddedMetadata

STORES = [EmbeddedMetadata, ZkMetadata]


def _protocol_methods() -> dict[str, inspect.Signature]:
    return {name: inspect.signature(member) for name, member in vars(MetadataStore).items()
            if inspect.isfunction(member) and not name.startswith("_")}


def _store(cls, tmp_path):
    return EmbeddedMetadata(str(tmp_path), 1) if cls is EmbeddedMetadata else ZkMetadata(None, 1, str(tmp_path))


def test_the_protocol_declares_what_the_broker_uses():
    assert {"topic", "topic_by_id", "partition_state", "create_topic", "delete_topic", "set_partition_count",
            "set_topic_configs", "live_brokers", "set_broker_configs", "set_client_quotas"} <= set(_protocol_methods())
    assert {"cluster_id", "topics", "broker_configs", "client_quotas", "finalized_features"} <= set(
        MetadataStore.__annotations__)


@pytest.mark.parametrize("cls", STORES, ids=lambda cls: cls.__name__)
def test_each_store_has_every_member_with_a_compatible_signature(cls, tmp_path):
    store = _store(cls, tmp_path)
    for name in MetadataStore.__annotations__:
        assert hasattr(store, name), f"{cls.__name__} lacks the attribute {name}"
    for name, declared in _protocol_methods().items():
        method = getattr(cls, name, None)
        assert callable(method), f"{cls.__name__} lacks {name}()"
        actual = list(inspect.signature(method).parameters.values())
        expected = list(declared.parameters.values())
        assert [(p.name, p.kind) for p in actual[:len(expected)]] == [(p.name, p.kind) for p in expected], \
            f"{cls.__name__}.{name}{inspect.signature(method)} does not take {name}{declared}"
        extra = [p.name for p in actual[len(expected):] if p.default is inspect.Parameter.empty]
        assert not extra, f"{cls.__name__}.{name} requires {extra}, which the protocol does not pass"


def test_embedded_store_answers_and_persists(tmp_path):
    store = EmbeddedMetadata(str(tmp_path), 1)
    store.load()
    meta = store.create_topic("orders", 3, 1, {"retention.ms": 1000})
    assert store.topic("orders") is meta and store.topic_by_id(meta.topic_id) is meta
    assert store.partition_state("orders", 2) == PartitionState(1, 0, [1], [1])
    assert store.partition_state("orders", 3) is None and store.partition_state("nope", 0) is None
    unknown = uuid.uuid4()
    assert topic_names_of(store, [meta.topic_id, unknown]) == ["orders", None]
    assert store.live_brokers() == [1] and store.controller_id == 1

    store.set_broker_configs("", {"log.retention.ms": "5"})
    entity = (("user", "alice"),)
    store.set_client_quotas({entity: {"producer_byte_rate": 10.0}})
    store.set_client_quotas({entity: {"consumer_byte_rate": 20.0}})
    assert store.read_broker_configs("") == {"log.retention.ms": "5"} and store.read_broker_configs("1") == {}
    assert store.read_client_quotas([entity, (("user", "bob"),)]) == {
        entity: {"producer_byte_rate": 10.0, "consumer_byte_rate": 20.0}}

    again = EmbeddedMetadata(str(tmp_path), 1)
    again.load()
    assert again.cluster_id == store.cluster_id
    assert again.topic_by_id(meta.topic_id).configs == {"retention.ms": 1000}
    assert again.broker_configs == {"": {"log.retention.ms": "5"}}
    assert again.client_quotas == store.client_quotas

    store.set_client_quotas({entity: {"producer_byte_rate": None, "consumer_byte_rate": None}})
    assert entity not in store.client_quotas
    assert store.delete_topic("orders") is meta
    assert store.topic("orders") is None and store.topic_by_id(meta.topic_id) is None

    with pytest.raises(ConfigError, match="Stored node id 1 doesn't match"):
        EmbeddedMetadata(str(tmp_path), 2).load()


def test_zookeeper_store_answers_from_its_cache_with_the_same_queries(tmp_path):
    store = ZkMetadata(None, 1, str(tmp_path))  # no ZooKeeper: the cache is filled by hand
    meta = TopicMeta("orders", random_topic_id(), 2, 3, {})
    store._index_topic(meta)
    store.assignments["orders"] = {0: [1, 2, 3], 1: [2, 3, 1]}
    store.states[("orders", 0)] = LeaderAndIsr(2, 4, [2, 1], controller_epoch=1)
    assert store.topic("orders") is meta and store.topic_by_id(meta.topic_id) is meta
    assert topic_names_of(store, [meta.topic_id]) == ["orders"]
    assert store.partition_state("orders", 0) == PartitionState(2, 4, [1, 2, 3], [2, 1])
    # A partition whose state znode was not read yet has no leader.
    assert store.partition_state("orders", 1) == PartitionState(NO_LEADER, -1, [2, 3, 1], [])
    assert store.partition_state("orders", 2) is None
    assert store._forget_topic("orders") is meta
    assert store.topic_by_id(meta.topic_id) is None
