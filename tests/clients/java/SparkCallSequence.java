import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DeletedRecords;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TopicListing;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.AppInfoParser;

/**
 * Replays, with plain kafka-clients, the calls Spark's Kafka connector (spark-sql-kafka-0-10,
 * Spark 4.0, built on kafka-clients 3.9.0) makes against a broker, and checks every answer
 * against what Apache Kafka answers. No Spark involved: this is the broker behaviour the
 * connector relies on, call by call.
 *
 *  driver   (KafkaOffsetReaderAdmin, ConsumerStrategy): Admin.listTopics + regex for
 *           subscribePattern (Spark matches with Regex.findFirstIn, i.e. anywhere in the name),
 *           Admin.describeTopics, Admin.listOffsets earliest / latest / forTimestamp with
 *           ListOffsetsOptions(isolation level), fresh describeTopics after partitions are added.
 *  executor (KafkaDataConsumer): a KafkaConsumer per partition with group.id
 *           "spark-kafka-source-...-executor", auto.offset.reset=none, enable.auto.commit=false,
 *           receive.buffer.bytes=65536, isolation.level=read_committed; assign, then per fetch
 *           seek, poll, position, seekToBeginning + position, seekToEnd + position;
 *           offsetsForTimes; OffsetOutOfRangeException when seeking below the log start offset
 *           after Admin.deleteRecords (the failOnDataLoss path) and past the log end offset.
 *  sink     (KafkaDataWriter): a KafkaProducer with only bootstrap servers and byte-array
 *           serializers, so the defaults apply (idempotent, acks=all), writing keyed records
 *           to a compacted topic.
 *  --legacy-pattern-subscription: the deprecated driver path
 *           (spark.sql.streaming.kafka.useDeprecatedOffsetFetching=true): KafkaConsumer.subscribe
 *           (Pattern) in a consumer group, which must be assigned every matching partition,
 *           including those of a topic created while it runs.
 *
 * Prints "SINK TOPIC <name>" so a caller can inspect the sink's batches (producer id, sequence).
 * --compacted-null-key: only checks that a compacted topic refuses a record without a key
 *           (INVALID_RECORD), as Kafka's log validation does; Spark's sink writing a null key
 *           column to a compacted changelog topic sees that error.
 *
 * Usage: java -cp JARS:CLASSES SparkCallSequence HOST:PORT [--timeout S]
 *                 [--legacy-pattern-subscription | --compacted-null-key]
 * Exit status 0 when every check passed; 1 with the reasons otherwise.
 */
public final class SparkCallSequence {
    static final int EVENT_PARTITIONS = 3;
    static final int EVENT_PARTITIONS_AFTER_GROWTH = 5;
    static final int EVENT_RECORDS = 300;
    static final int CLICK_RECORDS = 40;
    static final int SINK_RECORDS = 120;
    static final long STEP_MS = 10;  // CreateTime distance between consecutive planned records

    static final class CheckFailed extends Exception {
        private static final long serialVersionUID = 1L;

        CheckFailed(String message) { super(message); }
    }

    interface Body { void run() throws Exception; }

    /** A record as produced and acknowledged: where it landed and what it holds. */
    static final class Acked {
        final TopicPartition tp; final long offset; final long timestamp; final byte[] key; final byte[] value;

        Acked(TopicPartition tp, long offset, long timestamp, byte[] key, byte[] value) {
            this.tp = tp; this.offset = offset; this.timestamp = timestamp; this.key = key; this.value = value;
        }
    }

    final String bootstrap;
    final long timeoutMs;
    final String run = UUID.randomUUID().toString().substring(0, 8);
    final String prefix = "spark-seq-" + run;
    final String eventsTopic = prefix + "-in-events";
    final String clicksTopic = prefix + "-in-clicks";
    final String lateTopic = prefix + "-in-late";          // created while "the query runs"
    final String otherTopic = prefix + "-other";           // must not match the pattern
    final String sinkTopic = prefix + "-out-view";         // compacted, written by the "sink"
    final String pattern = prefix + "-in-.*";
    final String sparkGroup = "spark-kafka-source-" + UUID.randomUUID() + "--" + run;
    final long baseTimestamp = System.currentTimeMillis() - 60 * 60 * 1000;
    final Map<TopicPartition, List<Acked>> acked = new HashMap<>();
    final List<String> failures = new ArrayList<>();

    SparkCallSequence(String bootstrap, long timeoutMs) {
        this.bootstrap = bootstrap;
        this.timeoutMs = timeoutMs;
    }

    static byte[] bytes(String s) { return s.getBytes(StandardCharsets.UTF_8); }

    static String text(byte[] b) { return b == null ? "null" : new String(b, StandardCharsets.UTF_8); }

    void say(String message) {
        System.out.println("[spark-seq " + AppInfoParser.getVersion() + "] " + message);
        System.out.flush();
    }

    /** Something later steps depend on: a failure ends the run. */
    void step(String name, Body body) throws Exception {
        say(name + " ...");
        long began = System.nanoTime();
        body.run();
        say(String.format("%s: ok (%.2fs)", name, (System.nanoTime() - began) / 1e9));
    }

    /** A verification nothing later depends on: a failure is recorded and the run goes on. */
    void check(String name, Body body) {
        say(name + " ...");
        long began = System.nanoTime();
        try {
            body.run();
            say(String.format("%s: ok (%.2fs)", name, (System.nanoTime() - began) / 1e9));
        } catch (CheckFailed failure) {
            say(name + ": FAILED: " + failure.getMessage());
            failures.add(name + ": " + failure.getMessage());
        } catch (Exception error) {
            say(name + ": FAILED with " + error);
            error.printStackTrace(System.out);
            failures.add(name + ": " + error);
        }
    }

    static void expect(String what, Object got, Object want) throws CheckFailed {
        if (!Objects.equals(got, want)) throw new CheckFailed(what + ": got " + got + ", expected " + want);
    }

    Properties common(String clientId) {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, clientId);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) Math.min(timeoutMs, 30_000));
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) timeoutMs);
        return props;
    }

    // --- the driver -------------------------------------------------------------------------

    /** SubscribePatternStrategy.assignedTopicPartitions: listTopics, regex anywhere in the name. */
    Set<String> topicsMatchingPattern(Admin admin) throws Exception {
        Pattern regex = Pattern.compile(pattern);
        Set<String> matching = new TreeSet<>();
        for (TopicListing listing : admin.listTopics().listings().get(timeoutMs, TimeUnit.MILLISECONDS)) {
            if (regex.matcher(listing.name()).find()) matching.add(listing.name());
        }
        return matching;
    }

    /** ConsumerStrategy.retrieveAllPartitions: describeTopics, internal topics left out. */
    Map<String, Integer> describePartitions(Admin admin, Collection<String> topics) throws Exception {
        Map<String, Integer> counts = new TreeMap<>();
        Map<String, TopicDescription> descriptions =
                admin.describeTopics(topics).allTopicNames().get(timeoutMs, TimeUnit.MILLISECONDS);
        for (TopicDescription description : descriptions.values()) {
            if (description.isInternal()) continue;
            int partitions = 0;
            for (TopicPartitionInfo info : description.partitions()) {
                if (info.leader() == null || info.leader().isEmpty()) {
                    throw new CheckFailed(description.name() + " partition " + info.partition() + " has no leader");
                }
                if (info.partition() != partitions) {
                    throw new CheckFailed(description.name() + " partitions not numbered 0..n-1: " + description);
                }
                partitions++;
            }
            counts.put(description.name(), partitions);
        }
        return counts;
    }

    /** Waits until describeTopics shows `want` partitions per topic (topic creation is asynchronous). */
    void awaitPartitions(Admin admin, Map<String, Integer> want) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        Map<String, Integer> got = null;
        while (System.currentTimeMillis() < deadline) {
            try {
                got = describePartitions(admin, want.keySet());
                if (got.equals(new TreeMap<>(want))) return;
            } catch (java.util.concurrent.ExecutionException notYet) {
                got = Map.of("error", -1);
            }
            Thread.sleep(200);
        }
        throw new CheckFailed("describeTopics: got " + got + ", expected " + new TreeMap<>(want));
    }

    Map<TopicPartition, Long> listOffsets(Admin admin, Collection<TopicPartition> tps, OffsetSpec spec,
                                          IsolationLevel isolation) throws Exception {
        Map<TopicPartition, OffsetSpec> query = new HashMap<>();
        for (TopicPartition tp : tps) query.put(tp, spec);
        Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> answer =
                admin.listOffsets(query, new ListOffsetsOptions(isolation)).all().get(timeoutMs, TimeUnit.MILLISECONDS);
        Map<TopicPartition, Long> offsets = new TreeMap<>(SparkCallSequence::compare);
        answer.forEach((tp, info) -> offsets.put(tp, info.offset()));
        return offsets;
    }

    static int compare(TopicPartition a, TopicPartition b) {
        int byTopic = a.topic().compareTo(b.topic());
        return byTopic != 0 ? byTopic : Integer.compare(a.partition(), b.partition());
    }

    Map<TopicPartition, Long> sorted(Map<TopicPartition, Long> m) {
        Map<TopicPartition, Long> out = new TreeMap<>(SparkCallSequence::compare);
        out.putAll(m);
        return out;
    }

    List<TopicPartition> partitionsOf(String topic, int count) {
        List<TopicPartition> tps = new ArrayList<>();
        for (int p = 0; p < count; p++) tps.add(new TopicPartition(topic, p));
        return tps;
    }

    long logEndOffset(TopicPartition tp) { return acked.getOrDefault(tp, List.of()).size(); }

    Map<TopicPartition, Long> logEndOffsets(Collection<TopicPartition> tps) {
        Map<TopicPartition, Long> m = new TreeMap<>(SparkCallSequence::compare);
        for (TopicPartition tp : tps) m.put(tp, logEndOffset(tp));
        return m;
    }

    /** Per partition, the first offset whose timestamp is >= ts, or -1 (ListOffsets' answer). */
    Map<TopicPartition, Long> offsetsAtOrAfter(Collection<TopicPartition> tps, long ts, long logStart) {
        Map<TopicPartition, Long> m = new TreeMap<>(SparkCallSequence::compare);
        for (TopicPartition tp : tps) {
            long found = -1;
            for (Acked r : acked.getOrDefault(tp, List.of())) {
                if (r.offset >= logStart && r.timestamp >= ts) { found = r.offset; break; }
            }
            m.put(tp, found);
        }
        return m;
    }

    // --- the executors ----------------------------------------------------------------------

    /** KafkaSourceProvider.kafkaParamsForExecutors, with the read_committed isolation users set. */
    KafkaConsumer<byte[], byte[]> executorConsumer(TopicPartition tp) {
        Properties props = common("spark-executor-" + tp);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
        props.put(ConsumerConfig.GROUP_ID_CONFIG, sparkGroup + "-executor");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.RECEIVE_BUFFER_CONFIG, 65536);
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props);
        consumer.assign(List.of(tp));  // InternalKafkaConsumer.createConsumer
        return consumer;
    }

    /** InternalKafkaConsumer.getAvailableOffsetRange: [earliest, latest) through the consumer. */
    static long[] availableOffsetRange(KafkaConsumer<byte[], byte[]> consumer, TopicPartition tp) {
        consumer.seekToBeginning(List.of(tp));
        long earliest = consumer.position(tp);
        consumer.seekToEnd(List.of(tp));
        long latest = consumer.position(tp);
        return new long[] {earliest, latest};
    }

    /**
     * KafkaDataConsumer.get over [from, until) with failOnDataLoss=true: each fetch is seek, poll,
     * position, available offset range; an empty poll at an in-range offset is Spark's
     * "Cannot fetch record for offset ..." timeout.
     */
    List<ConsumerRecord<byte[], byte[]>> readRange(KafkaConsumer<byte[], byte[]> consumer, TopicPartition tp,
                                                   long from, long until) throws Exception {
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        long offset = from;
        while (offset < until) {
            consumer.seek(tp, offset);
            List<ConsumerRecord<byte[], byte[]>> polled = consumer.poll(Duration.ofMillis(timeoutMs)).records(tp);
            long offsetAfterPoll = consumer.position(tp);
            long[] range = availableOffsetRange(consumer, tp);
            if (polled.isEmpty()) {
                if (offset < range[0] || offset >= range[1]) {
                    throw new CheckFailed(tp + ": offset " + offset + " out of the available range ["
                            + range[0] + ", " + range[1] + ") without an OffsetOutOfRangeException from poll");
                }
                if (offsetAfterPoll == offset) {
                    throw new CheckFailed(tp + ": cannot fetch record for offset " + offset + " in " + timeoutMs + " ms");
                }
                offset = offsetAfterPoll;  // only invisible (transaction control) records were there
                continue;
            }
            for (ConsumerRecord<byte[], byte[]> r : polled) {
                if (r.offset() < offset) throw new CheckFailed(tp + ": poll after seek(" + offset + ") returned offset " + r.offset());
                if (r.offset() >= until) break;
                out.add(r);
            }
            offset = Math.max(offsetAfterPoll, polled.get(polled.size() - 1).offset() + 1);
        }
        return out;
    }

    void expectRecords(TopicPartition tp, List<ConsumerRecord<byte[], byte[]>> got, long from, long until) throws CheckFailed {
        List<Acked> planned = acked.get(tp);
        List<String> problems = new ArrayList<>();
        if (got.size() != until - from) problems.add("read " + got.size() + " records, expected " + (until - from));
        for (int i = 0; i < got.size() && problems.size() < 10; i++) {
            ConsumerRecord<byte[], byte[]> r = got.get(i);
            Acked want = planned.get((int) (from + i));
            if (r.offset() != want.offset) problems.add("record " + i + " at offset " + r.offset() + ", expected " + want.offset);
            if (!Arrays.equals(r.key(), want.key) || !Arrays.equals(r.value(), want.value)) {
                problems.add("offset " + r.offset() + ": " + text(r.key()) + "=" + text(r.value())
                        + ", expected " + text(want.key) + "=" + text(want.value));
            }
            if (r.timestamp() != want.timestamp) {
                problems.add("offset " + r.offset() + ": timestamp " + r.timestamp() + ", expected " + want.timestamp);
            }
        }
        if (!problems.isEmpty()) throw new CheckFailed(tp + " [" + from + ", " + until + "): " + String.join("; ", problems));
    }

    // --- producing --------------------------------------------------------------------------

    /** KafkaSourceProvider.kafkaParamsForProducer: bootstrap and byte-array serializers only. */
    KafkaProducer<byte[], byte[]> defaultProducer() {
        Properties props = common("spark-sink-" + run);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, (int) timeoutMs);
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) Math.max(timeoutMs, 31_000));
        return new KafkaProducer<>(props);
    }

    /** Sends records (partition null: the default partitioner hashes the key) and records the acks. */
    List<Acked> produce(KafkaProducer<byte[], byte[]> producer, String topic, Integer partition, int count,
                        String keyPrefix, int keys, long firstTimestamp) throws Exception {
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        List<ProducerRecord<byte[], byte[]>> sent = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(topic, partition, firstTimestamp + i * STEP_MS,
                    bytes(keyPrefix + "-" + (i % keys)), bytes("{\"seq\":" + i + ",\"topic\":\"" + topic + "\"}"));
            sent.add(record);
            futures.add(producer.send(record));
        }
        producer.flush();
        List<Acked> out = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            RecordMetadata m = futures.get(i).get(timeoutMs, TimeUnit.MILLISECONDS);
            ProducerRecord<byte[], byte[]> r = sent.get(i);
            if (m.timestamp() != r.timestamp()) {
                throw new CheckFailed(topic + ": record acked with timestamp " + m.timestamp() + ", sent " + r.timestamp());
            }
            TopicPartition tp = new TopicPartition(topic, m.partition());
            Acked a = new Acked(tp, m.offset(), r.timestamp(), r.key(), r.value());
            out.add(a);
            List<Acked> log = acked.computeIfAbsent(tp, k -> new ArrayList<>());
            if (m.offset() != log.size()) {
                throw new CheckFailed(tp + ": record acked at offset " + m.offset() + ", expected the next offset " + log.size());
            }
            log.add(a);
        }
        return out;
    }

    // --- the sequence -----------------------------------------------------------------------

    void run() throws Exception {
        say("run " + run + ": pattern '" + pattern + "', executor group.id " + sparkGroup + "-executor");
        try (Admin admin = Admin.create(common("spark-driver-" + run));
             KafkaProducer<byte[], byte[]> producer = defaultProducer()) {
            step("setup: create topics", () -> {
                admin.createTopics(List.of(
                        new NewTopic(eventsTopic, EVENT_PARTITIONS, (short) 1),
                        new NewTopic(clicksTopic, 1, (short) 1),
                        new NewTopic(otherTopic, 1, (short) 1),
                        new NewTopic(sinkTopic, 2, (short) 1).configs(Map.of("cleanup.policy", "compact"))))
                        .all().get(timeoutMs, TimeUnit.MILLISECONDS);
                awaitPartitions(admin, Map.of(eventsTopic, EVENT_PARTITIONS, clicksTopic, 1, otherTopic, 1, sinkTopic, 2));
            });
            step("setup: produce " + EVENT_RECORDS + " keyed events and " + CLICK_RECORDS + " clicks (default producer)", () -> {
                produce(producer, eventsTopic, null, EVENT_RECORDS, "customer", 37, baseTimestamp);
                produce(producer, clicksTopic, null, CLICK_RECORDS, "page", 5, baseTimestamp + 5);
                produce(producer, otherTopic, null, 3, "x", 1, baseTimestamp);
                say("events per partition: " + logEndOffsets(partitionsOf(eventsTopic, EVENT_PARTITIONS)));
            });

            List<TopicPartition> subscribed = new ArrayList<>();
            step("driver: subscribePattern = Admin.listTopics + regex, then describeTopics", () -> {
                Set<String> topics = topicsMatchingPattern(admin);
                expect("topics matching '" + pattern + "'", topics, new TreeSet<>(List.of(eventsTopic, clicksTopic)));
                Map<String, Integer> partitions = describePartitions(admin, topics);
                expect("partitions", partitions, new TreeMap<>(Map.of(eventsTopic, EVENT_PARTITIONS, clicksTopic, 1)));
                subscribed.addAll(partitionsOf(eventsTopic, EVENT_PARTITIONS));
                subscribed.addAll(partitionsOf(clicksTopic, 1));
            });

            check("driver: Admin.listOffsets earliest (read_committed)", () -> expect("earliest",
                    listOffsets(admin, subscribed, OffsetSpec.earliest(), IsolationLevel.READ_COMMITTED),
                    offsetsAtOrAfter(subscribed, Long.MIN_VALUE, 0)));
            for (IsolationLevel isolation : IsolationLevel.values()) {
                check("driver: Admin.listOffsets latest (" + isolation + ")", () -> expect("latest",
                        listOffsets(admin, subscribed, OffsetSpec.latest(), isolation), logEndOffsets(subscribed)));
            }
            long probe = baseTimestamp + (EVENT_RECORDS / 2) * STEP_MS + 3;
            long afterAll = baseTimestamp + EVENT_RECORDS * STEP_MS + 60_000;
            check("driver: Admin.listOffsets forTimestamp (startingOffsetsByTimestamp)", () -> {
                expect("forTimestamp(" + probe + ")",
                        listOffsets(admin, subscribed, OffsetSpec.forTimestamp(probe), IsolationLevel.READ_COMMITTED),
                        offsetsAtOrAfter(subscribed, probe, 0));
                expect("forTimestamp(before the first record)",
                        listOffsets(admin, subscribed, OffsetSpec.forTimestamp(baseTimestamp - 1000), IsolationLevel.READ_COMMITTED),
                        offsetsAtOrAfter(subscribed, Long.MIN_VALUE, 0));
                expect("forTimestamp(after the last record): -1, which Spark maps to latest or an error",
                        listOffsets(admin, subscribed, OffsetSpec.forTimestamp(afterAll), IsolationLevel.READ_COMMITTED),
                        offsetsAtOrAfter(subscribed, afterAll, 0));
            });

            check("executors: assign, seek, poll, position, seekToBeginning/seekToEnd (read_committed, auto.offset.reset=none)", () -> {
                for (TopicPartition tp : subscribed) {
                    long end = logEndOffset(tp);
                    try (KafkaConsumer<byte[], byte[]> consumer = executorConsumer(tp)) {
                        expectRecords(tp, readRange(consumer, tp, 0, end), 0, end);          // the first batch
                        if (end < 3) throw new CheckFailed(tp + " holds only " + end + " records; the plan needs 3 or more");
                        long mid = end / 3;
                        expectRecords(tp, readRange(consumer, tp, mid, end - 1), mid, end - 1);  // a later range
                        long[] range = availableOffsetRange(consumer, tp);
                        expect(tp + " available offset range", List.of(range[0], range[1]), List.of(0L, end));
                    }
                }
            });

            check("executors: KafkaConsumer.offsetsForTimes", () -> {
                for (TopicPartition tp : subscribed) {
                    try (KafkaConsumer<byte[], byte[]> consumer = executorConsumer(tp)) {
                        Map<TopicPartition, OffsetAndTimestamp> found = consumer.offsetsForTimes(Map.of(tp, probe));
                        OffsetAndTimestamp at = found.get(tp);
                        long want = offsetsAtOrAfter(List.of(tp), probe, 0).get(tp);
                        expect(tp + " offsetsForTimes(" + probe + ")", at == null ? -1L : at.offset(), want);
                        if (at != null) {
                            expect(tp + " offsetsForTimes timestamp", at.timestamp(), acked.get(tp).get((int) want).timestamp);
                        }
                        expect(tp + " offsetsForTimes(after the last record)",
                                consumer.offsetsForTimes(Map.of(tp, afterAll)).get(tp), null);
                    }
                }
            });

            TopicPartition lossy = new TopicPartition(eventsTopic, 0);
            long deleteBefore = logEndOffset(lossy) / 2;
            check("data loss: Admin.deleteRecords, then OFFSET_OUT_OF_RANGE below the log start offset", () -> {
                DeletedRecords deleted = admin.deleteRecords(Map.of(lossy, RecordsToDelete.beforeOffset(deleteBefore)))
                        .lowWatermarks().get(lossy).get(timeoutMs, TimeUnit.MILLISECONDS);
                expect("deleteRecords low watermark", deleted.lowWatermark(), deleteBefore);
                expect("listOffsets earliest after deleteRecords",
                        listOffsets(admin, List.of(lossy), OffsetSpec.earliest(), IsolationLevel.READ_COMMITTED).get(lossy),
                        deleteBefore);
                try (KafkaConsumer<byte[], byte[]> consumer = executorConsumer(lossy)) {
                    consumer.seek(lossy, deleteBefore - 1);
                    try {
                        List<ConsumerRecord<byte[], byte[]>> got = consumer.poll(Duration.ofMillis(timeoutMs)).records(lossy);
                        throw new CheckFailed("poll at offset " + (deleteBefore - 1) + " (below the log start offset "
                                + deleteBefore + ") returned " + got.size() + " records instead of throwing OffsetOutOfRangeException");
                    } catch (OffsetOutOfRangeException expected) {
                        expect("OffsetOutOfRangeException partitions", expected.offsetOutOfRangePartitions(),
                                Map.of(lossy, deleteBefore - 1));
                    }
                }
                try (KafkaConsumer<byte[], byte[]> consumer = executorConsumer(lossy)) {
                    long end = logEndOffset(lossy);
                    long[] range = availableOffsetRange(consumer, lossy);
                    expect("available offset range after deleteRecords", List.of(range[0], range[1]), List.of(deleteBefore, end));
                    expectRecords(lossy, readRange(consumer, lossy, deleteBefore, end), deleteBefore, end);
                    expect("offsetsForTimes(before the first record) after deleteRecords",
                            consumer.offsetsForTimes(Map.of(lossy, baseTimestamp - 1000)).get(lossy).offset(), deleteBefore);
                }
            });

            check("executors: OFFSET_OUT_OF_RANGE past the log end offset", () -> {
                TopicPartition tp = new TopicPartition(clicksTopic, 0);
                long past = logEndOffset(tp) + 5;
                try (KafkaConsumer<byte[], byte[]> consumer = executorConsumer(tp)) {
                    consumer.seek(tp, past);
                    try {
                        List<ConsumerRecord<byte[], byte[]>> got = consumer.poll(Duration.ofMillis(timeoutMs)).records(tp);
                        throw new CheckFailed("poll at offset " + past + " (past the log end offset " + logEndOffset(tp)
                                + ") returned " + got.size() + " records instead of throwing OffsetOutOfRangeException");
                    } catch (OffsetOutOfRangeException expected) {
                        expect("OffsetOutOfRangeException partitions", expected.offsetOutOfRangePartitions(), Map.of(tp, past));
                    }
                }
            });

            check("partitions added while running: createPartitions, then a fresh describeTopics/listOffsets", () -> {
                admin.createPartitions(Map.of(eventsTopic, NewPartitions.increaseTo(EVENT_PARTITIONS_AFTER_GROWTH)))
                        .all().get(timeoutMs, TimeUnit.MILLISECONDS);
                awaitPartitions(admin, Map.of(eventsTopic, EVENT_PARTITIONS_AFTER_GROWTH, clicksTopic, 1));
                List<TopicPartition> grown = new ArrayList<>(partitionsOf(eventsTopic, EVENT_PARTITIONS_AFTER_GROWTH));
                List<TopicPartition> added = grown.subList(EVENT_PARTITIONS, EVENT_PARTITIONS_AFTER_GROWTH);
                // KafkaMicroBatchStream: new partitions start at their earliest offset.
                expect("earliest of the new partitions",
                        listOffsets(admin, added, OffsetSpec.earliest(), IsolationLevel.READ_COMMITTED), logEndOffsets(added));
                TopicPartition newest = added.get(added.size() - 1);
                produce(producer, eventsTopic, newest.partition(), 25, "customer", 7, baseTimestamp + 100_000);
                expect("latest after growth",
                        listOffsets(admin, grown, OffsetSpec.latest(), IsolationLevel.READ_COMMITTED), logEndOffsets(grown));
                try (KafkaConsumer<byte[], byte[]> consumer = executorConsumer(newest)) {
                    expectRecords(newest, readRange(consumer, newest, 0, 25), 0, 25);
                }
            });

            check("a topic created while running matches subscribePattern on the next listTopics", () -> {
                admin.createTopics(List.of(new NewTopic(lateTopic, 2, (short) 1))).all().get(timeoutMs, TimeUnit.MILLISECONDS);
                awaitPartitions(admin, Map.of(lateTopic, 2));
                Set<String> topics = topicsMatchingPattern(admin);
                expect("topics matching '" + pattern + "'", topics, new TreeSet<>(List.of(eventsTopic, clicksTopic, lateTopic)));
                expect("partitions", describePartitions(admin, topics),
                        new TreeMap<>(Map.of(eventsTopic, EVENT_PARTITIONS_AFTER_GROWTH, clicksTopic, 1, lateTopic, 2)));
            });

            check("sink: default KafkaProducer (idempotent, acks=all) writes keyed records to a compacted topic", () -> {
                List<Acked> written = produce(producer, sinkTopic, null, SINK_RECORDS, "view-key", 30, baseTimestamp);
                Map<Integer, Integer> perPartition = new TreeMap<>();
                for (Acked a : written) perPartition.merge(a.tp.partition(), 1, Integer::sum);
                say("SINK TOPIC " + sinkTopic + " " + perPartition);
                List<TopicPartition> sinkPartitions = partitionsOf(sinkTopic, 2);
                expect("sink latest offsets",
                        listOffsets(admin, sinkPartitions, OffsetSpec.latest(), IsolationLevel.READ_UNCOMMITTED),
                        logEndOffsets(sinkPartitions));
            });
        }
    }

    /** Kafka's log validation: a compacted topic refuses a record without a key (INVALID_RECORD). */
    void runCompactedNullKey() throws Exception {
        say("run " + run + ": a record without a key, sent to compacted topic " + sinkTopic);
        try (Admin admin = Admin.create(common("spark-driver-" + run));
             KafkaProducer<byte[], byte[]> producer = defaultProducer()) {
            step("setup: create the compacted topic", () -> {
                admin.createTopics(List.of(new NewTopic(sinkTopic, 1, (short) 1).configs(Map.of("cleanup.policy", "compact"))))
                        .all().get(timeoutMs, TimeUnit.MILLISECONDS);
                awaitPartitions(admin, Map.of(sinkTopic, 1));
            });
            check("a record without a key is refused (InvalidRecordException), a keyed one accepted", () -> {
                Future<RecordMetadata> keyless = producer.send(new ProducerRecord<>(sinkTopic, 0, null, bytes("no key")));
                producer.flush();
                try {
                    RecordMetadata m = keyless.get(timeoutMs, TimeUnit.MILLISECONDS);
                    throw new CheckFailed("accepted at offset " + m.offset() + "; Kafka answers INVALID_RECORD");
                } catch (java.util.concurrent.ExecutionException refused) {
                    expect("error", refused.getCause().getClass().getSimpleName(), "InvalidRecordException");
                }
                RecordMetadata keyed = producer.send(new ProducerRecord<>(sinkTopic, 0, bytes("k"), bytes("v")))
                        .get(timeoutMs, TimeUnit.MILLISECONDS);
                expect("offset of the keyed record", keyed.offset(), 0L);
            });
        }
    }

    /** The deprecated driver path: KafkaConsumer.subscribe(Pattern) in a group (needs group APIs). */
    void runLegacyPatternSubscription() throws Exception {
        say("run " + run + ": legacy pattern subscription, pattern '" + pattern + "'");
        try (Admin admin = Admin.create(common("spark-driver-" + run))) {
            step("setup: create topics", () -> {
                admin.createTopics(List.of(new NewTopic(eventsTopic, EVENT_PARTITIONS, (short) 1),
                        new NewTopic(clicksTopic, 1, (short) 1), new NewTopic(otherTopic, 1, (short) 1)))
                        .all().get(timeoutMs, TimeUnit.MILLISECONDS);
                awaitPartitions(admin, Map.of(eventsTopic, EVENT_PARTITIONS, clicksTopic, 1, otherTopic, 1));
            });
            // KafkaSourceProvider.kafkaParamsForDriver on the consumer-based offset reader.
            Properties props = common("spark-driver-consumer-" + run);
            props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
            props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
            props.put(ConsumerConfig.GROUP_ID_CONFIG, sparkGroup + "-driver-0");
            props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 1);
            props.put(ConsumerConfig.RECEIVE_BUFFER_CONFIG, 65536);
            props.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, 500);  // see new topics soon
            try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
                consumer.subscribe(Pattern.compile(pattern));
                Set<TopicPartition> want = new HashSet<>(partitionsOf(eventsTopic, EVENT_PARTITIONS));
                want.addAll(partitionsOf(clicksTopic, 1));
                step("subscribe(Pattern): assigned every partition of the matching topics", () -> awaitAssignment(consumer, want));
                step("a topic created while running is assigned after the next metadata refresh", () -> {
                    admin.createTopics(List.of(new NewTopic(lateTopic, 2, (short) 1))).all().get(timeoutMs, TimeUnit.MILLISECONDS);
                    want.addAll(partitionsOf(lateTopic, 2));
                    awaitAssignment(consumer, want);
                });
            }
        }
    }

    void awaitAssignment(KafkaConsumer<byte[], byte[]> consumer, Set<TopicPartition> want) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (System.currentTimeMillis() < deadline) {
            consumer.poll(Duration.ofMillis(200));
            if (consumer.assignment().equals(want)) return;
        }
        throw new CheckFailed("assignment " + new TreeSet<>(consumer.assignment()).toString()
                + ", expected " + want);
    }

    public static void main(String[] args) {
        if (args.length < 1) {
            System.err.println("usage: SparkCallSequence HOST:PORT [--timeout SECONDS] [--legacy-pattern-subscription | --compacted-null-key]");
            System.exit(2);
        }
        long timeoutMs = 30_000;
        String mode = "connector";
        for (int i = 1; i < args.length; i++) {
            switch (args[i]) {
                case "--timeout": timeoutMs = (long) (Double.parseDouble(args[++i]) * 1000); break;
                case "--legacy-pattern-subscription": mode = "legacy"; break;
                case "--compacted-null-key": mode = "null-key"; break;
                default: System.err.println("unknown option " + args[i]); System.exit(2);
            }
        }
        long started = System.nanoTime();
        SparkCallSequence sequence = new SparkCallSequence(args[0], timeoutMs);
        try {
            switch (mode) {
                case "legacy": sequence.runLegacyPatternSubscription(); break;
                case "null-key": sequence.runCompactedNullKey(); break;
                default: sequence.run();
            }
        } catch (CheckFailed failure) {
            sequence.failures.add(failure.getMessage());
            sequence.say("FAILED: " + failure.getMessage());
        } catch (Exception error) {
            sequence.failures.add(error.toString());
            sequence.say("FAILED with an exception:");
            error.printStackTrace(System.out);
        }
        double elapsed = (System.nanoTime() - started) / 1e9;
        if (!sequence.failures.isEmpty()) {
            sequence.say(String.format("%d CHECK(S) FAILED (%.1fs):", sequence.failures.size(), elapsed));
            for (String failure : sequence.failures) sequence.say("  - " + failure.split("\n")[0]);
            System.out.flush();
            Runtime.getRuntime().halt(1);  // client threads must not keep a failed run alive
        }
        sequence.say(String.format("ALL CHECKS PASSED (%.1fs)", elapsed));
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }
}
