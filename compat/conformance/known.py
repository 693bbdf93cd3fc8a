"""Differences between Kafka's answers and ours that are explained: kept on purpose, or open bugs.

Each entry matches differences by shell-style patterns over "case :: step :: path" (see
compare.Difference.where) and says why. KEPT: a Kafka behaviour we deliberately do not copy (also
listed in docs/conformance.md). OPEN: a conformance bug we know of and have not fixed yet; it is
reported as such, never as conformance. A difference that matches nothing here is unexplained and fails the run.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

KEPT, OPEN = "kept", "open"


@dataclass(frozen=True)
class Known:
    pattern: str
    kind: str
    reason: str
    # Only against these Kafka versions (shell-style patterns, e.g. "3.9.*"); empty: against any.
    kafka_versions: tuple[str, ...] = ()

    def matches(self, where: str, kafka_version: str | None = None) -> bool:
        if self.kafka_versions and not any(fnmatch.fnmatchcase(kafka_version or "", v) for v in self.kafka_versions):
            return False
        return fnmatch.fnmatchcase(where, self.pattern)


KNOWN: tuple[Known, ...] = (
    # APIs Kafka 4.3 advertises that kafka-wire does not serve: docs/compatibility.md "APIs served" says
    # why, key by key.
    *(Known(f"*ApiVersions v* :: api_keys.{key}", KEPT, why) for key, why in (
        (64, "UnregisterBroker is KRaft only: docs/compatibility.md, APIs served"),
        (80, "AddRaftVoter is KRaft only: docs/compatibility.md, APIs served"),
        (81, "RemoveRaftVoter is KRaft only: docs/compatibility.md, APIs served"),
    )),
    Known("*:: *configs.min.insync.replicas.*", KEPT,
          "Kafka 4.x's storage format writes a cluster-level min.insync.replicas (DYNAMIC_DEFAULT_BROKER_CONFIG, "
          "source 3) because eligible leader replicas (KIP-966) need one; kafka-wire has no ELR and reports the "
          "static default (source 5), as Kafka 3.9 does (docs/conformance.md)"),
    Known("*ApiVersions v* :: api_keys.27.min_version", KEPT,
          "WriteTxnMarkers v0 is still served (Kafka 3.x's version; Kafka 4.0 dropped it, KIP-896); only brokers "
          "send it, and a wider range costs none of them anything"),
    *(Known(f"*ApiVersions v* :: {kind}_features.{feature}", KEPT, why)
      for kind in ("supported", "finalized") for feature, why in (
          ("metadata.version", "kafka-wire has no KRaft metadata log, so no metadata.version "
                               "(docs/compatibility.md, Feature flags)"),
          ("kraft.version", "kafka-wire has no KRaft controller quorum (docs/compatibility.md, Feature flags)"),
          ("eligible.leader.replicas.version", "eligible leader replicas (KIP-966) are not implemented"))
      if not (kind == "finalized" and feature == "kraft.version")),
    Known("create_partitions_over_the_operation_limit*:: 10,005 partitions :: results[[]0].error_*", KEPT,
          "Kafka 4.3 fails a CreatePartitions over its 10,000-records-per-operation limit with UNKNOWN_SERVER_ERROR "
          "and no message (an exception its controller does not map); kafka-wire answers POLICY_VIOLATION with the "
          "limit named, as Kafka's CreateTopics does for the same limit"),
    Known("*ApiVersions v* :: api_keys.0.min_version", KEPT,
          "Produce v0-2 (message formats v0 and v1) are not served: Kafka 4.3 still lists v0 but refuses the old "
          "formats (KIP-896); kafka-wire writes RecordBatch v2 only"),
    # -- the data path (scenarios/data_path.py) ------------------------------------------------------------
    Known("produce_null_records@v* :: null records :: *", KEPT,
          "A Produce whose partition carries null records: Kafka 4.3 never answers it (the client times out); "
          "we answer that partition INVALID_RECORD, as Kafka answers empty records."),
    # -- the dynamic broker config walk (scenarios/dynamic_broker_boundaries.py) ----------------------------
    Known("dynamic_broker_boundaries_*:: sasl.enabled.mechanisms='*unknown*' :: *", KEPT,
          "kafka-wire serves the SASL mechanisms PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 only and refuses another "
          "(INVALID_REQUEST, the allowed values named) when it is set; Kafka 4.3 stores any name and fails a "
          "client's handshake with it later"),
    Known("dynamic_broker_boundaries_*:: ssl.enabled.protocols='*unknown*' :: *", KEPT,
          "kafka-wire's TLS (Python's ssl) serves TLSv1.2 and TLSv1.3 only and refuses another protocol "
          "(INVALID_REQUEST, the allowed values named) when it is set; Kafka 4.3 stores any name on a broker "
          "without a TLS listener"),
)

# Against Kafka 3.9: kafka-wire answers as Kafka 4.3 does where the two lines differ. Each entry names
# the 4.x change; the 4.3.0 run compares the same cases with none of these entries.
_FOLLOWS_4 = "kafka-wire answers as Kafka 4.3 does; Kafka 3.9 predates this: "
KNOWN = KNOWN + tuple(Known(pattern, KEPT, _FOLLOWS_4 + why, ("3.*",)) for pattern, why in (
    ("*ApiVersions v* :: api_keys.*",
     "kafka-wire advertises Kafka 4.3's API versions (4.0 removed old versions, KIP-896; 4.x added new ones)"),
    ("*ApiVersions v* :: *_features.*", "the feature levels of 4.x (transaction.version 2, group.version 1)"),
    ("*:: *authorized_operations",
     "Kafka 4.0's group configs (KIP-848) made DESCRIBE_CONFIGS and ALTER_CONFIGS group operations (3400, not 328)"),
    ("removed_topic_configs*", "Kafka 4.0 removed message.format.version, message.downconversion.enable and "
                               "message.timestamp.difference.max.ms"),
    ("client_replay_*:: topics.removed-topic-configs-*",
     "a replayed all-topics Metadata also lists the topics the removed_topic_configs scenario made with "
     "message.format.version, message.downconversion.enable or message.timestamp.difference.max.ms: Kafka 3.9 "
     "created them, Kafka 4.0 removed those configs and refuses them, as kafka-wire does"),
    ("consumer_*", "the KIP-848 consumer group protocol is generally available and on by default from Kafka 4.0 "
                   "(3.9: UNSUPPORTED_VERSION unless enabled)"),
    ("*consumer_group*", "the KIP-848 consumer group protocol is on by default from Kafka 4.0"),
    ("*group_configs*", "group configs (config resource type 32, KIP-848) arrived in Kafka 4.0; 3.9 refuses the "
                        "resource type (INVALID_REQUEST) and lists no groups in ListConfigResources"),
    ("update_features*", "Kafka 4.x's feature levels (transaction.version, group.version) and UpdateFeatures checks"),
    ("describe_groups_states*:: * :: groups[[]*[]].members*",
     "Kafka 4.x keeps members' last assignment (and order) in DescribeGroups outside Stable"),
    *((f"*:: *configs.{key}", "Kafka 4.0 removed the topic config " + key + " (KIP-724 and KIP-937); 3.9 lists it "
                               "with its default in DescribeConfigs and CreateTopics answers")
      for key in ("message.format.version", "message.downconversion.enable", "message.timestamp.difference.max.ms")),
    ("*alter_broker_configs@v* :: broker *log.message.format.version :: responses[[]0].error_*",
     "Kafka 4.0 removed log.message.format.version (KIP-724): 4.3 stores it as any other broker key it does "
     "not know, 3.9 refuses to change it dynamically (INVALID_REQUEST)"),
    ("fetch_isolation_levels@v* :: isolation level 2 :: responses[[]0].partitions.0.records",
     "an isolation level Kafka does not know (2): 4.3 answers an empty record set, 3.9 null records"),
    ("fetch_replica_id_not_a_replica@v* :: replica 2 :: node_endpoints*",
     "a follower fetch from a broker that is not a replica: 3.9 names the leader in node_endpoints (v16+, "
     "KIP-951), 4.3 does not"),
    ("list_offsets_unknown@v* :: partition 0 twice :: topics.*.partitions",
     "a partition named twice in one ListOffsets: 4.3 answers it once (INVALID_REQUEST), 3.9 once per mention"),
    ("offset_commit_no_such_member@v* :: * :: topics.*.partitions.0.error_code",
     "Kafka 4.0's group coordinator (the KIP-848 rewrite, the only one from 4.0) answers GROUP_ID_NOT_FOUND "
     "for an OffsetCommit with a generation into a group that does not exist; 3.9's old coordinator "
     "answered ILLEGAL_GENERATION"),
    ("txn_produce@v* :: *higher epoch :: responses[[]0].partition_responses[[]0].*",
     "transaction.version 2 (KIP-890 part 2, on from 4.0): a transactional Produce is verified against the "
     "coordinator's producer epoch, so a higher epoch than the transaction's is INVALID_PRODUCER_EPOCH; "
     "3.9 (transaction.version 0) appended it"),
    ("txn_offset_commit_member_checks@v* :: higher producer epoch :: *",
     "transaction.version 2 (KIP-890 part 2): TxnOffsetCommit's producer epoch is verified as Produce's is"),
    ("broker_loggers@v* :: *",
     "broker loggers: Kafka 3.9 reaches its loggers through log4j 1 (reload4j in its distribution); the reference "
     "3.9.1 here runs with log4j 2 (compat/reference/pom.xml, one binding for every version), so it answers "
     "UNKNOWN_SERVER_ERROR to every broker-logger request, where Kafka 4.3 (log4j 2) answers as kafka-wire"),
    ("config_boundaries_*:: segment.bytes='1048575' :: *",
     "Kafka 4.0 raised segment.bytes' minimum from 14 bytes to 1 MiB (KIP-1030): 3.9 accepts 1048575"),
    ("client_replay_librdkafka_tests_createtopics_*:: * CreateTopics v* :: topics.*.error_*",
     "librdkafka's test 0092 creates its topic with segment.bytes=20000: Kafka 4.0 raised the minimum to 1 MiB "
     "(KIP-1030), so 4.3 and kafka-wire refuse it (INVALID_CONFIG), 3.9 creates the topic"),
    ("client_replay_librdkafka_tests_alterconfigs_*:: * AlterConfigs v* :: responses[[]0].error_*",
     "librdkafka's test 0092 sets every topic config of its list, message.format.version=0.10.0.0 among them: "
     "Kafka 4.0 removed that config (KIP-724), so 4.3 and kafka-wire refuse it (INVALID_CONFIG), 3.9 takes it"),
    ("config_boundaries_*:: internal.segment.bytes=* :: *",
     "Kafka 4.0 added the test-only topic config internal.segment.bytes; 3.9 answers INVALID_CONFIG "
     "\"Unknown topic config name\""),
    *((f"dynamic_broker_boundaries_*:: {key}=* :: *", "Kafka 4.x added the broker config " + key + "; 3.9 does not "
       "know it and stores any value as an unknown key")
      for key in ("follower.fetch.last.tiered.offset.enable", "group.consumer.assignment.interval.ms",
                  "group.share.assignment.interval.ms", "group.streams.assignment.interval.ms",
                  "group.coordinator.cached.buffer.max.bytes", "share.coordinator.cached.buffer.max.bytes",
                  "remote.list.offsets.request.timeout.ms")),
    *((f"dynamic_broker_boundaries_*:: {key}=* :: *", "Kafka 4.0 made the remote log manager's thread pool " + key +
       " dynamic (resized within half and double); 3.9 answers \"Cannot update these configs dynamically\"")
      for key in ("remote.log.reader.threads", "remote.log.manager.copier.thread.pool.size",
                  "remote.log.manager.expiration.thread.pool.size", "remote.log.manager.follower.thread.pool.size")),
    ("dynamic_broker_boundaries_*:: log.segment.bytes='1048575' :: *",
     "Kafka 4.0 raised log.segment.bytes' minimum from 14 bytes to 1 MiB (KIP-1030): 3.9 accepts 1048575"),
    ("dynamic_broker_boundaries_*:: num.recovery.threads.per.data.dir='2147483647' :: error_message",
     "Kafka 4.0 raised num.recovery.threads.per.data.dir's default from 1 to 2 (KIP-1030): the refused resize "
     "names the current value"),
    ("dynamic_broker_boundaries_*:: num.replica.fetchers='0' :: error_message",
     "Kafka 4.x checks num.replica.fetchers' minimum (1) with the value's type; 3.9 refused 0 only as a thread "
     "pool resized below 1"),
    ("dynamic_broker_boundaries_*:: *='*,' :: *",
     "Kafka 4.x refuses a list value with an empty item (\"values must not be empty\"); 3.9 accepted it, or named "
     "the empty item as a value not allowed"),
    ("dynamic_broker_boundaries_*:: ssl.*store.type=* :: error_message",
     "Kafka 3.9's broker (Scala) prints the set of listener-only keys as HashSet(...), 4.x as [...]"),
    # The replay of real clients' requests (scenarios/client_replay.py): identical against 4.3.0.
    ("client_replay_*_offsetcommit_*:: * OffsetCommit v* :: topics.*.error_code",
     "Kafka 4.0's group coordinator answers GROUP_ID_NOT_FOUND for an OffsetCommit with a generation into a group "
     "that does not exist (the replay's commit names a member the replaying broker never saw); 3.9's old "
     "coordinator answered ILLEGAL_GENERATION"),
    ("client_replay_*_consumergroupdescribe_*",
     "the KIP-848 consumer group protocol is on by default from Kafka 4.0 (3.9: UNSUPPORTED_VERSION unless enabled)"),
    ("client_replay_*:: * DescribeConfigs v* :: *message.timestamp.after.max.ms.*",
     "Kafka 4.0 lowered message.timestamp.after.max.ms' default to one hour (3600000, KIP-937); 3.9's is "
     "Long.MAX_VALUE"),
    ("client_replay_*_listgroups_*:: * ListGroups v* :: groups*",
     "the classic groups a first JoinGroup (MEMBER_ID_REQUIRED) created and nobody joined: Kafka 4.0's group "
     "coordinator lists them all as Empty, as kafka-wire does; 3.9's old coordinator listed only the latest"),
    ("authz_offset_fetch@v* :: alice, named topics :: topics.*",
     "Kafka 4.0's group coordinator answers an OffsetFetch the group authorization refused with each named "
     "topic and the error; 3.9 left the topics out"),
))


def explain(where: str, kafka_version: str | None = None) -> Known | None:
    for known in KNOWN:
        if known.matches(where, kafka_version):
            return known
    return None
