"""Feature flags (broker/features.py): UpdateFeatures' checks and messages as Kafka 4.3's controller
gives them, ApiVersions' feature fields, and where finalized levels are kept (embedded metadata
file, Kafka's /feature znode)."""

from __future__ import annotations

import asyncio
import json

import pytest

from broker.cluster.zk_metadata import feature_znode, parse_feature_znode
from broker.config import BrokerConfig
from broker.features import (
    GROUP_VERSION,
    SAFE_DOWNGRADE,
    SHARE_VERSION,
    STREAMS_VERSION,
    TRANSACTION_VERSION,
    UNSAFE_DOWNGRADE,
    UPGRADE,
    FeatureUpdate,
    InvalidFeatureUpdate,
    api_versions_features,
    bootstrap_levels,
    effective_levels,
    plan_feature_updates,
    serves_transaction_version_2,
    supported_features,
)
from broker.handlers import HANDLERS
from broker.metadata_store import EmbeddedMetadata
from broker.node import Broker
from kafka_wire.errors import ErrorCode
from kafka_wire.messages import APIS_BY_NAME

SUPPORTED = {TRANSACTION_VERSION: (0, 2), GROUP_VERSION: (0, 1)}
CURRENT = {TRANSACTION_VERSION: 2, GROUP_VERSION: 1}


def plan(*updates: tuple[str, int, int]) -> dict[str, int]:
    return plan_feature_updates(CURRENT, SUPPORTED, [FeatureUpdate(*u) for u in updates], node_id=1)


# The messages are the ones Apache Kafka 4.3.0 answered (a KRaft single node, UpdateFeatures v2
# through client/wire_client.py) for the same updates from the same levels.
@pytest.mark.parametrize("update, message", [
    ((TRANSACTION_VERSION, 1, UPGRADE),
     "Invalid update version 1 for feature transaction.version. Can't downgrade the version of this feature "
     "without setting the upgrade type to either safe or unsafe downgrade."),
    ((TRANSACTION_VERSION, 3, UPGRADE),
     "Invalid update version 3 for feature transaction.version. Local controller 1 only supports versions 0-2"),
    (("foo.version", 1, UPGRADE),
     "Invalid update version 1 for feature foo.version. Local controller 1 does not support this feature."),
    (("foo.version", 0, SAFE_DOWNGRADE), "Invalid update version 0 for feature foo.version. Feature foo.version not found."),
    ((TRANSACTION_VERSION, 1, 5),
     "Invalid update version 1 for feature transaction.version. The controller does not support the given upgrade type."),
    ((TRANSACTION_VERSION, -1, SAFE_DOWNGRADE),
     "Invalid update version -1 for feature transaction.version. A feature version cannot be less than 0."),
    ((GROUP_VERSION, 2, SAFE_DOWNGRADE),
     "Invalid update version 2 for feature group.version. Local controller 1 only supports versions 0-1"),
])
def test_invalid_updates_as_kafka_words_them(update, message):
    with pytest.raises(InvalidFeatureUpdate) as raised:
        plan(update)
    assert str(raised.value) == message
    assert raised.value.error == ErrorCode.INVALID_UPDATE_VERSION


def test_downgrade_to_a_newer_version_is_refused():
    with pytest.raises(InvalidFeatureUpdate, match="Can't downgrade to a newer version."):
        plan_feature_updates({TRANSACTION_VERSION: 1}, SUPPORTED, [FeatureUpdate(TRANSACTION_VERSION, 2, SAFE_DOWNGRADE)], 1)


def test_valid_updates():
    assert plan((TRANSACTION_VERSION, 2, UPGRADE)) == CURRENT  # the same level: nothing changes
    assert plan((TRANSACTION_VERSION, 2, SAFE_DOWNGRADE)) == CURRENT
    assert plan((TRANSACTION_VERSION, 1, SAFE_DOWNGRADE)) == {TRANSACTION_VERSION: 1, GROUP_VERSION: 1}
    # Level 0 (kafka-features.sh disable) removes the feature.
    assert plan((TRANSACTION_VERSION, 0, UNSAFE_DOWNGRADE)) == {GROUP_VERSION: 1}
    assert plan((GROUP_VERSION, 0, SAFE_DOWNGRADE), (TRANSACTION_VERSION, 1, SAFE_DOWNGRADE)) == {TRANSACTION_VERSION: 1}
    assert plan() == CURRENT


def test_one_invalid_update_fails_them_all():
    with pytest.raises(InvalidFeatureUpdate, match="transaction.version"):
        plan((GROUP_VERSION, 0, SAFE_DOWNGRADE), (TRANSACTION_VERSION, 3, UPGRADE))


def test_supported_features_follow_the_served_versions():
    supported = supported_features(HANDLERS)
    assert supported[GROUP_VERSION] == (0, 1)
    # Level 2 is claimed exactly when every API version a TV2 client sends is served.
    assert supported[TRANSACTION_VERSION] == (0, 2 if serves_transaction_version_2(HANDLERS) else 1)
    assert supported[SHARE_VERSION] == (0, 1)
    assert supported[STREAMS_VERSION] == (0, 1)
    assert set(supported) == {TRANSACTION_VERSION, GROUP_VERSION, SHARE_VERSION, STREAMS_VERSION}  # no metadata.version
    assert bootstrap_levels(supported) == {TRANSACTION_VERSION: supported[TRANSACTION_VERSION][1], GROUP_VERSION: 1,
                                           SHARE_VERSION: 1, STREAMS_VERSION: 1}


def test_stored_levels_above_what_is_supported_count_as_the_highest():
    assert effective_levels({TRANSACTION_VERSION: 2, "share.version": 1}, {TRANSACTION_VERSION: (0, 1)}) == \
        {TRANSACTION_VERSION: 1}


def test_api_versions_features_leave_out_minimum_zero_below_v4():
    v3 = api_versions_features({**SUPPORTED, "x.version": (1, 3)}, CURRENT, 7, 3)
    assert v3["supported_features"] == [{"name": "x.version", "min_version": 1, "max_version": 3}]
    v4 = api_versions_features(SUPPORTED, CURRENT, 7, 4)
    assert {f["name"]: (f["min_version"], f["max_version"]) for f in v4["supported_features"]} == SUPPORTED
    for fields in (v3, v4):
        assert fields["finalized_features_epoch"] == 7
        assert fields["finalized_features"] == [
            {"name": GROUP_VERSION, "max_version_level": 1, "min_version_level": 1},
            {"name": TRANSACTION_VERSION, "max_version_level": 2, "min_version_level": 2}]
    # The fields encode as ApiVersions' tagged fields.
    api = APIS_BY_NAME["ApiVersions"]
    decoded = api.response.decode(api.response.encode_bytes(
        {"error_code": 0, "api_keys": [], "throttle_time_ms": 0, **v3}, 3), 3)
    assert decoded.finalized_features_epoch == 7
    assert [(f.name, f.max_version_level) for f in decoded.finalized_features] == [(GROUP_VERSION, 1),
                                                                                   (TRANSACTION_VERSION, 2)]
    assert [f.name for f in decoded.supported_features] == ["x.version"]


def test_embedded_metadata_keeps_finalized_features(tmp_path):
    store = EmbeddedMetadata(str(tmp_path), 1)
    store.load()
    assert store.finalized_features is None and store.finalized_features_epoch == -1
    store.bootstrap_finalized_features({TRANSACTION_VERSION: 2, GROUP_VERSION: 1})
    assert store.set_finalized_features({GROUP_VERSION: 1}) == 1
    again = EmbeddedMetadata(str(tmp_path), 1)
    again.load()
    assert again.finalized_features == {GROUP_VERSION: 1} and again.finalized_features_epoch == 1


def test_feature_znode_is_kafkas():
    data = feature_znode({TRANSACTION_VERSION: 2, GROUP_VERSION: 1})
    assert json.loads(data) == {"version": 2, "status": 1, "features": {
        GROUP_VERSION: {"max_version_level": 1}, TRANSACTION_VERSION: {"max_version_level": 2}}}
    assert parse_feature_znode(data) == {TRANSACTION_VERSION: 2, GROUP_VERSION: 1}
    # Version 1 (Kafka 2.7-3.x) also wrote min_version_level; a disabled znode finalizes nothing.
    assert parse_feature_znode(b'{"version":1,"status":1,"features":{"transaction.version":'
                               b'{"min_version_level":1,"max_version_level":2}}}') == {TRANSACTION_VERSION: 2}
    assert parse_feature_znode(b'{"version":1,"status":0,"features":{}}') == {}


def test_broker_bootstraps_updates_and_keeps_features(tmp_path):
    config = BrokerConfig({"log.dirs": str(tmp_path)})

    async def run():
        broker = Broker(config)
        broker.load()
        levels, epoch = broker.finalized_features()
        assert levels == bootstrap_levels(broker.supported_features()) and epoch == 0
        assert broker.update_features([FeatureUpdate(GROUP_VERSION, 0, SAFE_DOWNGRADE)], validate_only=True) == \
            ErrorCode.NONE
        assert broker.finalized_features() == (levels, 0)
        broker.update_features([FeatureUpdate(GROUP_VERSION, 0, SAFE_DOWNGRADE)], validate_only=False)
        assert broker.feature_level(GROUP_VERSION) == 0 and broker.finalized_features()[1] == 1
        broker.log_flusher.shutdown()
        restarted = Broker(config)
        restarted.load()
        assert restarted.feature_level(GROUP_VERSION) == 0 and restarted.finalized_features()[1] == 1
        restarted.log_flusher.shutdown()

    asyncio.run(run())
