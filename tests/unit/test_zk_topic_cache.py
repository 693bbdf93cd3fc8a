"""broker/cluster/zk_metadata.py: a broker's cache of a topic znode only moves forward. A change this
broker made is read back at once (_drain_topic); a watch's copy of the znode read before that change
is posted to the loop and can arrive after it, and must not take the cache back (a CreatePartitions
right after another would then see the old partition count)."""

from __future__ import annotations

import uuid

import pytest

import broker.cluster.zk_metadata as zk_metadata


@pytest.fixture
def cache(monkeypatch, tmp_path):
    monkeypatch.setattr(zk_metadata, "DataWatch", lambda *args, **kwargs: None)  # no ZooKeeper here
    return zk_metadata.ZkMetadata(None, 1, str(tmp_path))


def _node(topic_id, partitions: int, czxid: int, mzxid: int):
    return zk_metadata._TopicNode(topic_id, {p: [1] for p in range(partitions)}, czxid, mzxid)


def test_an_older_read_of_the_topic_znode_changes_nothing(cache):
    topic_id = uuid.uuid4()
    cache._apply_topic("t", _node(topic_id, 3, 5, 10), {})
    cache._apply_topic("t", _node(topic_id, 4, 5, 12), {})  # grown here, read back at once
    cache._apply_topic("t", _node(topic_id, 3, 5, 10), {})  # the watch's earlier copy, late
    assert cache.topic("t").partitions == 4
    cache._apply_topic("t", _node(topic_id, 5, 5, 14), {})
    assert cache.topic("t").partitions == 5


def test_a_topic_made_again_is_taken_whatever_its_versions(cache):
    cache._apply_topic("t", _node(uuid.uuid4(), 3, 5, 20), {})
    again = uuid.uuid4()
    cache._apply_topic("t", _node(again, 1, 30, 30), {})  # deleted and created again: a new znode
    assert (cache.topic("t").topic_id, cache.topic("t").partitions) == (again, 1)
    cache._apply_topic("t", None, {})
    cache._apply_topic("t", _node(again, 2, 40, 15), {})
    assert cache.topic("t").partitions == 2
