"""Feature flags (KIP-584): the features this broker supports and the levels the cluster finalized.

ApiVersions v3+ carries both (tagged fields), kafka-features.sh describes them through Java's
Admin.describeFeatures (an ApiVersions request) and changes the finalized levels with UpdateFeatures.
Clients act on the finalized levels: kafka-clients 4.x runs transactions with KIP-890 part 2 (an
epoch bump on every commit/abort, no AddPartitionsToTxn/AddOffsetsToTxn) when
transaction.version >= 2.

The features, as Kafka 4.3 names and numbers them, and why these:

- transaction.version 0-2. 0: transactions as Kafka 3.x; 1: __transaction_state values in the
  flexible TransactionLogValue v1; 2: KIP-890 part 2 for clients that ask for it with EndTxn v5,
  Produce v12 and TxnOffsetCommit v5 (level 2 is supported only while those versions are served,
  `supported_features`). The finalized level also picks how the coordinator itself aborts a
  timed-out or fenced transaction (with the epoch bump of TV2 or the fence of TV0/1).
- group.version 0-1. 1: KIP-848 consumer groups (ConsumerGroupHeartbeat/ConsumerGroupDescribe);
  at 0 those answer UNSUPPORTED_VERSION, as Kafka's do.
- Not metadata.version: it versions a KRaft cluster's metadata log (its record formats) and the
  inter-broker protocol of KRaft brokers. kafka-wire keeps cluster metadata in a JSON file (single
  node) or in ZooKeeper (as Kafka's ZooKeeper mode, whose brokers reported no metadata.version
  either) and has no KRaft metadata log, so any level would claim record formats it neither writes
  nor reads. kafka-features.sh lists the features we do report; updating metadata.version answers
  INVALID_UPDATE_VERSION "... does not support this feature.", which is true.
- share.version 0-1. 1: KIP-932 share groups (ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch,
  ShareAcknowledge, broker/share_groups.py); at 0 those answer UNSUPPORTED_VERSION, as Kafka's do.
- streams.version 0-1. 1: KIP-1071 streams groups (StreamsGroupHeartbeat, StreamsGroupDescribe,
  coordinator/streams_group_coordinator.py); at 0 those answer UNSUPPORTED_VERSION, as Kafka's do.
- Not kraft.version nor eligible.leader.replicas.version (KIP-966): neither is implemented, so no
  level of them is claimed.

Finalized levels start, when none were ever stored, at each supported feature's highest level (a
freshly formatted Kafka 4.3 finalizes its latest production levels the same way), with epoch 0;
every change moves the epoch by one. They live with the cluster metadata: the embedded metadata
file, or the /feature znode in cluster mode (Kafka's ZooKeeper-mode FeatureZNode, whose znode
version is the epoch).
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_wire.errors import ErrorCode

TRANSACTION_VERSION = "transaction.version"
GROUP_VERSION = "group.version"
SHARE_VERSION = "share.version"
STREAMS_VERSION = "streams.version"

# FeatureUpdate.UpgradeType codes (UpdateFeatures v1+).
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3
UPGRADE_TYPES = (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE)

# (API name, first version) a transaction.version 2 client sends; level 2 needs all of them served.
TV2_API_VERSIONS = (("Produce", 12), ("EndTxn", 5), ("TxnOffsetCommit", 5), ("InitProducerId", 5),
                    ("AddPartitionsToTxn", 5), ("AddOffsetsToTxn", 4))


def serves_transaction_version_2(handlers) -> bool:
    by_name = {h.api.name: h for h in handlers.values()}
    return all(name in by_name and by_name[name].max_version >= version for name, version in TV2_API_VERSIONS)


def supported_features(handlers=None) -> dict[str, tuple[int, int]]:
    """{feature: (min level, max level)} this broker's software supports."""
    if handlers is None:
        from .handlers import HANDLERS as handlers
    supported = {
        TRANSACTION_VERSION: (0, 2 if serves_transaction_version_2(handlers) else 1),
        GROUP_VERSION: (0, 1),
        STREAMS_VERSION: (0, 1),
        SHARE_VERSION: (0, 1),
    }
    return supported


def bootstrap_levels(supported: dict[str, tuple[int, int]]) -> dict[str, int]:
    """The levels a cluster starts with: each feature's highest."""
    return {name: high for name, (_, high) in supported.items() if high > 0}


def effective_levels(stored: dict[str, int], supported: dict[str, tuple[int, int]]) -> dict[str, int]:
    """Stored levels as this broker can honour them: a level above what it supports (data written
    by a newer kafka-wire) counts as its highest; unknown features are ignored."""
    levels = {}
    for name, level in stored.items():
        if name in supported and level > 0:
            levels[name] = min(level, supported[name][1])
    return levels


@dataclass(frozen=True)
class FeatureUpdate:
    feature: str
    level: int
    upgrade_type: int


class InvalidFeatureUpdate(Exception):
    """INVALID_UPDATE_VERSION with Kafka's FeatureControlManager message."""

    def __init__(self, feature: str, level: int, reason: str) -> None:
        super().__init__(f"Invalid update version {level} for feature {feature}. {reason}")
        self.error = ErrorCode.INVALID_UPDATE_VERSION


def _range_text(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}-{high}"


def plan_feature_updates(current: dict[str, int], supported: dict[str, tuple[int, int]],
                         updates: list[FeatureUpdate], node_id: int) -> dict[str, int]:
    """The finalized levels after `updates`, all or nothing (Kafka's FeatureControlManager.updateFeatures,
    checks in its order). Level 0 removes a feature. Raises InvalidFeatureUpdate."""
    proposed = dict(current)
    for update in updates:
        name, level = update.feature, update.level
        if update.upgrade_type not in UPGRADE_TYPES:
            raise InvalidFeatureUpdate(name, level, "The controller does not support the given upgrade type.")
        now = current.get(name, 0)
        if level < 0:
            raise InvalidFeatureUpdate(name, level, "A feature version cannot be less than 0.")
        low, high = supported.get(name, (0, 0))
        if not low <= level <= high:
            if high == 0:
                raise InvalidFeatureUpdate(name, level, f"Local controller {node_id} does not support this feature.")
            raise InvalidFeatureUpdate(name, level,
                                       f"Local controller {node_id} only supports versions {_range_text(low, high)}")
        if level < now and update.upgrade_type == UPGRADE:
            raise InvalidFeatureUpdate(name, level, "Can't downgrade the version of this feature without setting "
                                                    "the upgrade type to either safe or unsafe downgrade.")
        if level > now and update.upgrade_type != UPGRADE:
            raise InvalidFeatureUpdate(name, level, "Can't downgrade to a newer version.")
        if name not in supported:
            raise InvalidFeatureUpdate(name, level, f"Feature {name} not found.")
        if level == 0:
            proposed.pop(name, None)
        else:
            proposed[name] = level
    return proposed


def api_versions_features(supported: dict[str, tuple[int, int]], finalized: dict[str, int], epoch: int,
                          version: int) -> dict:
    """The feature fields of an ApiVersions response. Below v4, features whose minimum level is 0
    are left out (older clients cannot read them, KAFKA-17011), as Kafka does."""
    return {
        "supported_features": [{"name": name, "min_version": low, "max_version": high}
                               for name, (low, high) in sorted(supported.items())
                               if version >= 4 or low > 0],
        "finalized_features_epoch": epoch,
        # Kafka reports a finalized level as a range of that one level.
        "finalized_features": [{"name": name, "max_version_level": level, "min_version_level": level}
                               for name, level in sorted(finalized.items())],
        "zk_migration_ready": False,
    }
