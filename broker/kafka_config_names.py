"""The names of Apache Kafka 4.3.0's broker configs, to tell a typo from a Kafka setting kafka-wire
does without when `kafka-wire serve` warns about keys it does not read, and which of them Kafka lets
AlterConfigs change at run time (broker/config.validate_dynamic_broker_configs).

Taken from the "KafkaConfig values:" block a Kafka 4.3.0 broker logs at start (360 names).
"""

KAFKA_BROKER_CONFIG_NAMES = frozenset("""
    add.partitions.to.txn.retry.backoff.max.ms add.partitions.to.txn.retry.backoff.ms
    advertised.listeners alter.config.policy.class.name alter.log.dirs.replication.quota.window.num
    alter.log.dirs.replication.quota.window.size.seconds authorizer.class.name
    auto.create.topics.enable auto.leader.rebalance.enable background.threads
    broker.heartbeat.interval.ms broker.id broker.rack broker.session.timeout.ms
    client.quota.callback.class compression.gzip.level compression.lz4.level compression.type
    compression.zstd.level config.providers connection.failed.authentication.delay.ms
    connections.max.idle.ms connections.max.reauth.ms controlled.shutdown.enable
    controller.listener.names controller.performance.always.log.threshold.ms
    controller.performance.sample.period.ms controller.quorum.append.linger.ms
    controller.quorum.auto.join.enable controller.quorum.bootstrap.servers
    controller.quorum.election.backoff.max.ms controller.quorum.election.timeout.ms
    controller.quorum.fetch.max.bytes controller.quorum.fetch.snapshot.max.bytes
    controller.quorum.fetch.timeout.ms controller.quorum.request.timeout.ms
    controller.quorum.retry.backoff.ms controller.quorum.voters controller.quota.window.num
    controller.quota.window.size.seconds controller.socket.timeout.ms cordoned.log.dirs
    create.topic.policy.class.name default.replication.factor
    delegation.token.expiry.check.interval.ms delegation.token.expiry.time.ms
    delegation.token.max.lifetime.ms delegation.token.secret.key
    delete.records.purgatory.purge.interval.requests delete.topic.enable early.start.listeners
    fetch.max.bytes fetch.purgatory.purge.interval.requests follower.fetch.last.tiered.offset.enable
    group.consumer.assignment.interval.ms group.consumer.assignors
    group.consumer.heartbeat.interval.ms group.consumer.max.assignment.interval.ms
    group.consumer.max.heartbeat.interval.ms group.consumer.max.session.timeout.ms
    group.consumer.max.size group.consumer.migration.policy
    group.consumer.min.assignment.interval.ms group.consumer.min.heartbeat.interval.ms
    group.consumer.min.session.timeout.ms group.consumer.regex.refresh.interval.ms
    group.consumer.session.timeout.ms group.coordinator.append.linger.ms
    group.coordinator.background.threads group.coordinator.cached.buffer.max.bytes
    group.coordinator.rebalance.protocols group.coordinator.threads group.initial.rebalance.delay.ms
    group.max.session.timeout.ms group.max.size group.min.session.timeout.ms
    group.share.assignment.interval.ms group.share.assignors group.share.delivery.count.limit
    group.share.heartbeat.interval.ms group.share.initialize.retry.interval.ms
    group.share.max.assignment.interval.ms group.share.max.delivery.count.limit
    group.share.max.heartbeat.interval.ms group.share.max.partition.max.record.locks
    group.share.max.record.lock.duration.ms group.share.max.session.timeout.ms
    group.share.max.share.sessions group.share.max.size group.share.min.assignment.interval.ms
    group.share.min.delivery.count.limit group.share.min.heartbeat.interval.ms
    group.share.min.partition.max.record.locks group.share.min.record.lock.duration.ms
    group.share.min.session.timeout.ms group.share.partition.max.record.locks
    group.share.persister.class.name group.share.record.lock.duration.ms
    group.share.session.timeout.ms group.streams.assignment.interval.ms
    group.streams.heartbeat.interval.ms group.streams.initial.rebalance.delay.ms
    group.streams.max.assignment.interval.ms group.streams.max.heartbeat.interval.ms
    group.streams.max.session.timeout.ms group.streams.max.size group.streams.max.standby.replicas
    group.streams.min.assignment.interval.ms group.streams.min.heartbeat.interval.ms
    group.streams.min.session.timeout.ms group.streams.num.standby.replicas
    group.streams.session.timeout.ms initial.broker.registration.timeout.ms
    inter.broker.listener.name internal.metadata.delete.delay.millis
    internal.metadata.log.segment.bytes internal.metadata.max.batch.size.in.bytes
    kafka.metrics.polling.interval.secs kafka.metrics.reporters
    leader.imbalance.check.interval.seconds listener.security.protocol.map listeners
    log.cleaner.backoff.ms log.cleaner.dedupe.buffer.size log.cleaner.delete.retention.ms
    log.cleaner.enable log.cleaner.io.buffer.load.factor log.cleaner.io.buffer.size
    log.cleaner.io.max.bytes.per.second log.cleaner.max.compaction.lag.ms
    log.cleaner.min.cleanable.ratio log.cleaner.min.compaction.lag.ms log.cleaner.threads
    log.cleanup.policy log.dir log.dir.failure.timeout.ms log.dirs log.flush.interval.messages
    log.flush.interval.ms log.flush.offset.checkpoint.interval.ms log.flush.scheduler.interval.ms
    log.flush.start.offset.checkpoint.interval.ms log.index.interval.bytes log.index.size.max.bytes
    log.initial.task.delay.ms log.local.retention.bytes log.local.retention.ms
    log.message.timestamp.after.max.ms log.message.timestamp.before.max.ms
    log.message.timestamp.type log.preallocate log.retention.bytes log.retention.check.interval.ms
    log.retention.hours log.retention.minutes log.retention.ms log.roll.hours log.roll.jitter.hours
    log.roll.jitter.ms log.roll.ms log.segment.bytes log.segment.delete.delay.ms
    max.connection.creation.rate max.connections max.connections.per.ip
    max.connections.per.ip.overrides max.incremental.fetch.session.cache.slots
    max.request.partition.size.limit message.max.bytes metadata.log.dir
    metadata.log.max.record.bytes.between.snapshots metadata.log.max.snapshot.interval.ms
    metadata.log.segment.bytes metadata.log.segment.ms metadata.max.idle.interval.ms
    metadata.max.retention.bytes metadata.max.retention.ms metric.reporters metrics.num.samples
    metrics.recording.level metrics.sample.window.ms min.insync.replicas node.id num.io.threads
    num.network.threads num.partitions num.recovery.threads.per.data.dir
    num.replica.alter.log.dirs.threads num.replica.fetchers offset.metadata.max.bytes
    offsets.commit.timeout.ms offsets.load.buffer.size offsets.retention.check.interval.ms
    offsets.retention.minutes offsets.topic.compression.codec offsets.topic.num.partitions
    offsets.topic.replication.factor offsets.topic.segment.bytes principal.builder.class
    process.roles producer.id.expiration.check.interval.ms producer.id.expiration.ms
    producer.purgatory.purge.interval.requests queued.max.request.bytes queued.max.requests
    quota.window.num quota.window.size.seconds remote.fetch.max.wait.ms
    remote.list.offsets.request.timeout.ms remote.log.index.file.cache.total.size.bytes
    remote.log.index.file.cache.ttl.ms remote.log.manager.copier.thread.pool.size
    remote.log.manager.copy.max.bytes.per.second remote.log.manager.copy.quota.window.num
    remote.log.manager.copy.quota.window.size.seconds remote.log.manager.expiration.thread.pool.size
    remote.log.manager.fetch.max.bytes.per.second remote.log.manager.fetch.quota.window.num
    remote.log.manager.fetch.quota.window.size.seconds remote.log.manager.follower.thread.pool.size
    remote.log.manager.task.interval.ms remote.log.manager.task.retry.backoff.max.ms
    remote.log.manager.task.retry.backoff.ms remote.log.manager.task.retry.jitter
    remote.log.manager.thread.pool.size remote.log.metadata.custom.metadata.max.bytes
    remote.log.metadata.manager.class.name remote.log.metadata.manager.class.path
    remote.log.metadata.manager.impl.prefix remote.log.metadata.manager.listener.name
    remote.log.reader.max.pending.tasks remote.log.reader.threads
    remote.log.storage.manager.class.name remote.log.storage.manager.class.path
    remote.log.storage.manager.impl.prefix remote.log.storage.system.enable replica.fetch.backoff.ms
    replica.fetch.max.bytes replica.fetch.min.bytes replica.fetch.response.max.bytes
    replica.fetch.wait.max.ms replica.high.watermark.checkpoint.interval.ms replica.lag.time.max.ms
    replica.selector.class replica.socket.receive.buffer.bytes replica.socket.timeout.ms
    replication.quota.window.num replication.quota.window.size.seconds request.timeout.ms
    sasl.client.callback.handler.class sasl.enabled.mechanisms sasl.jaas.config
    sasl.kerberos.kinit.cmd sasl.kerberos.min.time.before.relogin
    sasl.kerberos.principal.to.local.rules sasl.kerberos.service.name
    sasl.kerberos.ticket.renew.jitter sasl.kerberos.ticket.renew.window.factor
    sasl.login.callback.handler.class sasl.login.class sasl.login.connect.timeout.ms
    sasl.login.read.timeout.ms sasl.login.refresh.buffer.seconds
    sasl.login.refresh.min.period.seconds sasl.login.refresh.window.factor
    sasl.login.refresh.window.jitter sasl.login.retry.backoff.max.ms sasl.login.retry.backoff.ms
    sasl.mechanism.controller.protocol sasl.mechanism.inter.broker.protocol
    sasl.oauthbearer.assertion.algorithm sasl.oauthbearer.assertion.claim.aud
    sasl.oauthbearer.assertion.claim.exp.seconds sasl.oauthbearer.assertion.claim.iss
    sasl.oauthbearer.assertion.claim.jti.include sasl.oauthbearer.assertion.claim.nbf.seconds
    sasl.oauthbearer.assertion.claim.sub sasl.oauthbearer.assertion.file
    sasl.oauthbearer.assertion.private.key.file sasl.oauthbearer.assertion.private.key.passphrase
    sasl.oauthbearer.assertion.template.file sasl.oauthbearer.client.credentials.client.id
    sasl.oauthbearer.client.credentials.client.secret sasl.oauthbearer.clock.skew.seconds
    sasl.oauthbearer.expected.audience sasl.oauthbearer.expected.issuer
    sasl.oauthbearer.jwks.endpoint.refresh.ms sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms
    sasl.oauthbearer.jwks.endpoint.retry.backoff.ms sasl.oauthbearer.jwks.endpoint.url
    sasl.oauthbearer.jwt.retriever.class sasl.oauthbearer.jwt.validator.class sasl.oauthbearer.scope
    sasl.oauthbearer.scope.claim.name sasl.oauthbearer.sub.claim.name
    sasl.oauthbearer.token.endpoint.url sasl.server.callback.handler.class
    sasl.server.max.receive.size security.inter.broker.protocol security.providers
    server.max.startup.time.ms share.coordinator.append.linger.ms
    share.coordinator.cached.buffer.max.bytes share.coordinator.cold.partition.snapshot.interval.ms
    share.coordinator.load.buffer.size share.coordinator.snapshot.update.records.per.snapshot
    share.coordinator.state.topic.compression.codec share.coordinator.state.topic.min.isr
    share.coordinator.state.topic.num.partitions share.coordinator.state.topic.prune.interval.ms
    share.coordinator.state.topic.replication.factor share.coordinator.state.topic.segment.bytes
    share.coordinator.threads share.coordinator.write.timeout.ms
    share.fetch.purgatory.purge.interval.requests socket.connection.setup.timeout.max.ms
    socket.connection.setup.timeout.ms socket.listen.backlog.size socket.receive.buffer.bytes
    socket.request.max.bytes socket.send.buffer.bytes ssl.allow.dn.changes ssl.allow.san.changes
    ssl.cipher.suites ssl.client.auth ssl.enabled.protocols ssl.endpoint.identification.algorithm
    ssl.engine.factory.class ssl.key.password ssl.keymanager.algorithm
    ssl.keystore.certificate.chain ssl.keystore.key ssl.keystore.location ssl.keystore.password
    ssl.keystore.type ssl.principal.mapping.rules ssl.protocol ssl.provider
    ssl.secure.random.implementation ssl.trustmanager.algorithm ssl.truststore.certificates
    ssl.truststore.location ssl.truststore.password ssl.truststore.type telemetry.max.bytes
    transaction.abort.timed.out.transaction.cleanup.interval.ms transaction.max.timeout.ms
    transaction.partition.verification.enable
    transaction.remove.expired.transaction.cleanup.interval.ms
    transaction.state.log.load.buffer.size transaction.state.log.min.isr
    transaction.state.log.num.partitions transaction.state.log.replication.factor
    transaction.state.log.segment.bytes transaction.two.phase.commit.enable
    transactional.id.expiration.ms unclean.leader.election.enable
    unclean.leader.election.interval.ms unstable.api.versions.enable
    unstable.feature.versions.enable
""".split())


# Those of them AlterConfigs/IncrementalAlterConfigs may change at run time (Kafka's
# DynamicBrokerConfig.AllDynamicConfigs): the 99 a Kafka 4.3.0 broker describes with read_only false
# (DescribeConfigs of its own id, every key). The others are refused dynamically ("Cannot update
# these configs dynamically"); names Kafka does not know at all are accepted and stored.
KAFKA_DYNAMIC_BROKER_CONFIG_NAMES = frozenset("""
    background.threads compression.gzip.level compression.lz4.level compression.type
    compression.zstd.level config.providers cordoned.log.dirs
    follower.fetch.last.tiered.offset.enable group.consumer.assignment.interval.ms
    group.coordinator.cached.buffer.max.bytes group.share.assignment.interval.ms
    group.streams.assignment.interval.ms listener.security.protocol.map listeners
    log.cleaner.backoff.ms log.cleaner.dedupe.buffer.size log.cleaner.delete.retention.ms
    log.cleaner.io.buffer.load.factor log.cleaner.io.buffer.size log.cleaner.io.max.bytes.per.second
    log.cleaner.max.compaction.lag.ms log.cleaner.min.cleanable.ratio
    log.cleaner.min.compaction.lag.ms log.cleaner.threads log.cleanup.policy
    log.flush.interval.messages log.flush.interval.ms log.index.interval.bytes
    log.index.size.max.bytes log.local.retention.bytes log.local.retention.ms
    log.message.timestamp.after.max.ms log.message.timestamp.before.max.ms
    log.message.timestamp.type log.preallocate log.retention.bytes log.retention.ms
    log.roll.jitter.ms log.roll.ms log.segment.bytes log.segment.delete.delay.ms
    max.connection.creation.rate max.connections max.connections.per.ip
    max.connections.per.ip.overrides message.max.bytes metric.reporters min.insync.replicas
    num.io.threads num.network.threads num.recovery.threads.per.data.dir num.replica.fetchers
    principal.builder.class producer.id.expiration.ms remote.fetch.max.wait.ms
    remote.list.offsets.request.timeout.ms remote.log.index.file.cache.total.size.bytes
    remote.log.manager.copier.thread.pool.size remote.log.manager.copy.max.bytes.per.second
    remote.log.manager.expiration.thread.pool.size remote.log.manager.fetch.max.bytes.per.second
    remote.log.manager.follower.thread.pool.size remote.log.reader.threads sasl.enabled.mechanisms
    sasl.jaas.config sasl.kerberos.kinit.cmd sasl.kerberos.min.time.before.relogin
    sasl.kerberos.principal.to.local.rules sasl.kerberos.service.name
    sasl.kerberos.ticket.renew.jitter sasl.kerberos.ticket.renew.window.factor
    sasl.login.refresh.buffer.seconds sasl.login.refresh.min.period.seconds
    sasl.login.refresh.window.factor sasl.login.refresh.window.jitter
    sasl.mechanism.inter.broker.protocol share.coordinator.cached.buffer.max.bytes ssl.cipher.suites
    ssl.client.auth ssl.enabled.protocols ssl.endpoint.identification.algorithm
    ssl.engine.factory.class ssl.key.password ssl.keymanager.algorithm
    ssl.keystore.certificate.chain ssl.keystore.key ssl.keystore.location ssl.keystore.password
    ssl.keystore.type ssl.protocol ssl.provider ssl.secure.random.implementation
    ssl.trustmanager.algorithm ssl.truststore.certificates ssl.truststore.location
    ssl.truststore.password ssl.truststore.type transaction.partition.verification.enable
    unclean.leader.election.enable
""".split())

# SslConfigs.RECONFIGURABLE_CONFIGS: dynamic only with a listener prefix (listener.name.<l>.<name>).
KAFKA_LISTENER_ONLY_SECURITY_CONFIG_NAMES = frozenset("""
    ssl.key.password ssl.keystore.certificate.chain ssl.keystore.key ssl.keystore.location
    ssl.keystore.password ssl.keystore.type ssl.truststore.certificates ssl.truststore.location
    ssl.truststore.password ssl.truststore.type
""".split())

# DynamicBrokerConfig.PerBrokerConfigs (the listener and security configs but the cluster-level
# listener ones): only on a broker's own id, never on the default broker "".
KAFKA_PER_BROKER_CONFIG_NAMES = frozenset(
    name for name in KAFKA_DYNAMIC_BROKER_CONFIG_NAMES
    if name.startswith(("ssl.", "sasl.")) or name in ("listeners", "listener.security.protocol.map",
                                                       "principal.builder.class"))
# Listener-prefixed configs that may be set on the default broker: DynamicBrokerConfig.ClusterLevelListenerConfigs.
KAFKA_CLUSTER_LEVEL_LISTENER_CONFIG_NAMES = frozenset({"max.connections", "max.connection.creation.rate",
                                                      "num.network.threads"})


# Kafka 4.3.0's dynamic broker configs (those of KAFKA_DYNAMIC_BROKER_CONFIG_NAMES) that kafka-wire has no
# use for, with the type (ConfigDef.Type) and default Kafka 4.3.0 describes for them (DescribeConfigs of
# a fresh 4.3.0 broker, include_synonyms and include_documentation): (name, type, default as Kafka prints it).
# broker/config.py declares them so that AlterConfigs checks a value's type and DescribeConfigs describes
# them as Kafka does; a value set is stored and never applied.
KAFKA_UNUSED_DYNAMIC_BROKER_CONFIGS = (
    ('background.threads', 'INT', '10'),
    ('config.providers', 'LIST', ''),
    ('cordoned.log.dirs', 'LIST', ''),
    ('follower.fetch.last.tiered.offset.enable', 'BOOLEAN', 'false'),
    ('group.consumer.assignment.interval.ms', 'INT', '1000'),
    ('group.coordinator.cached.buffer.max.bytes', 'INT', '1048588'),
    ('group.share.assignment.interval.ms', 'INT', '1000'),
    ('group.streams.assignment.interval.ms', 'INT', '1000'),
    ('log.cleaner.dedupe.buffer.size', 'LONG', '134217728'),
    ('log.cleaner.io.buffer.load.factor', 'DOUBLE', '0.9'),
    ('log.cleaner.io.buffer.size', 'INT', '524288'),
    ('log.cleaner.io.max.bytes.per.second', 'DOUBLE', '1.7976931348623157E308'),
    ('log.cleaner.threads', 'INT', '1'),
    ('max.connection.creation.rate', 'INT', '2147483647'),
    ('metric.reporters', 'LIST', 'org.apache.kafka.common.metrics.JmxReporter'),
    ('num.recovery.threads.per.data.dir', 'INT', '2'),
    ('num.replica.fetchers', 'INT', '1'),
    ('principal.builder.class', 'CLASS', 'org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder'),
    ('remote.fetch.max.wait.ms', 'INT', '500'),
    ('remote.list.offsets.request.timeout.ms', 'LONG', '30000'),
    ('remote.log.index.file.cache.total.size.bytes', 'LONG', '1073741824'),
    ('remote.log.manager.copier.thread.pool.size', 'INT', '10'),
    ('remote.log.manager.copy.max.bytes.per.second', 'LONG', '9223372036854775807'),
    ('remote.log.manager.expiration.thread.pool.size', 'INT', '10'),
    ('remote.log.manager.fetch.max.bytes.per.second', 'LONG', '9223372036854775807'),
    ('remote.log.manager.follower.thread.pool.size', 'INT', '2'),
    ('remote.log.reader.threads', 'INT', '10'),
    ('sasl.jaas.config', 'PASSWORD', None),
    ('sasl.kerberos.kinit.cmd', 'STRING', '/usr/bin/kinit'),
    ('sasl.kerberos.min.time.before.relogin', 'LONG', '60000'),
    ('sasl.kerberos.principal.to.local.rules', 'LIST', 'DEFAULT'),
    ('sasl.kerberos.service.name', 'STRING', None),
    ('sasl.kerberos.ticket.renew.jitter', 'DOUBLE', '0.05'),
    ('sasl.kerberos.ticket.renew.window.factor', 'DOUBLE', '0.8'),
    ('sasl.login.refresh.buffer.seconds', 'SHORT', '300'),
    ('sasl.login.refresh.min.period.seconds', 'SHORT', '60'),
    ('sasl.login.refresh.window.factor', 'DOUBLE', '0.8'),
    ('sasl.login.refresh.window.jitter', 'DOUBLE', '0.05'),
    ('sasl.mechanism.inter.broker.protocol', 'STRING', 'GSSAPI'),
    ('share.coordinator.cached.buffer.max.bytes', 'INT', '1048588'),
    ('ssl.endpoint.identification.algorithm', 'STRING', 'https'),
    ('ssl.engine.factory.class', 'CLASS', None),
    ('ssl.keymanager.algorithm', 'STRING', 'SunX509'),
    ('ssl.provider', 'STRING', None),
    ('ssl.secure.random.implementation', 'STRING', None),
    ('ssl.trustmanager.algorithm', 'STRING', 'PKIX'),
)

# The lower bounds Kafka 4.3.0's ConfigDef puts on some of them (atLeast): a value below is refused with
# "Invalid value V for configuration K: Value must be at least M", as for the keys kafka-wire reads.
KAFKA_UNUSED_DYNAMIC_BROKER_CONFIG_MINIMUMS = {
    "background.threads": 1, "num.recovery.threads.per.data.dir": 1, "log.cleaner.threads": 0,
    "log.cleaner.io.buffer.size": 0, "max.connection.creation.rate": 0,
    "remote.log.index.file.cache.total.size.bytes": 1, "remote.log.reader.threads": 1,
    "remote.log.manager.copy.max.bytes.per.second": 1, "remote.log.manager.fetch.max.bytes.per.second": 1,
    "remote.fetch.max.wait.ms": 1, "remote.list.offsets.request.timeout.ms": 1,
    # found by the conformance boundary walk (compat/conformance/scenarios/dynamic_broker_boundaries.py)
    "num.replica.fetchers": 1, "remote.log.manager.copier.thread.pool.size": 1,
    "remote.log.manager.expiration.thread.pool.size": 1, "remote.log.manager.follower.thread.pool.size": 1,
    "group.coordinator.cached.buffer.max.bytes": 512 * 1024, "share.coordinator.cached.buffer.max.bytes": 512 * 1024,
}
