import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.AppInfoParser;

/**
 * Java kafka-clients run the client acceptance sequence against a broker (the same plan as
 * tests/clients/acceptance.py): create a topic with Admin, produce with a DEFAULT KafkaProducer
 * (idempotent, acks=all) once per compression codec, read everything back with assign +
 * seekToBeginning and no group.id (read_uncommitted, then read_committed as Spark's executors
 * do), check every key/value/header/timestamp/offset, list earliest/latest/by-timestamp offsets
 * through the consumer and through Admin, describe and delete the topic.
 *
 * Uses only public client API, so one source compiles against kafka-clients 3.9.0 and 4.3.0.
 * Usage: java -cp JARS:CLASSES ClientCheck HOST:PORT [--records N] [--codecs none,gzip,...] [--timeout S]
 * Exit status 0 when every check passed; 1 with the reasons otherwise.
 */
public final class ClientCheck {
    static final int PARTITIONS = 2;

    /** A Kafka-visible difference from what Apache Kafka would have shown. */
    static final class CheckFailed extends Exception {
        private static final long serialVersionUID = 1L;

        CheckFailed(String message) { super(message); }
    }

    interface Body { void run() throws Exception; }

    /** One planned record: where it must land and what must be read back. */
    static final class Planned {
        final int index; final String codec; final int partition; final long offset;
        final byte[] key; final byte[] value; final String[][] headers; final long timestamp;

        Planned(int index, String codec, int partition, long offset, byte[] key, byte[] value,
                String[][] headers, long timestamp) {
            this.index = index; this.codec = codec; this.partition = partition; this.offset = offset;
            this.key = key; this.value = value; this.headers = headers; this.timestamp = timestamp;
        }
    }

    final String bootstrap;
    final String client;
    final List<String> codecs;
    final int recordsPerCodec;
    final long timeoutMs;
    final String topic;
    final long baseTimestamp = System.currentTimeMillis() - 10 * 60 * 1000;
    final List<Planned> plan = new ArrayList<>();
    final Map<Integer, Long> logEndOffsets = new TreeMap<>();
    final List<TopicPartition> partitions = new ArrayList<>();
    final List<String> failures = new ArrayList<>();
    /** Feature (compat matrix name, see tests/clients/acceptance.py FEATURES) -> "pass" / "fail". */
    final Map<String, String> features = new java.util.LinkedHashMap<>();

    ClientCheck(String bootstrap, List<String> codecs, int recordsPerCodec, long timeoutMs) {
        this.bootstrap = bootstrap;
        this.client = "java-" + AppInfoParser.getVersion();
        this.codecs = codecs;
        this.recordsPerCodec = recordsPerCodec;
        this.timeoutMs = timeoutMs;
        this.topic = "check-" + client.replace('.', '-') + "-" + UUID.randomUUID().toString().substring(0, 10);
        long[] nextOffset = new long[PARTITIONS];
        for (int c = 0; c < codecs.size(); c++) {
            String codec = codecs.get(c);
            for (int i = 0; i < recordsPerCodec; i++) {
                int index = c * recordsPerCodec + i;
                int partition = index % PARTITIONS;
                String value = ("value " + codec + " " + index + " ").repeat(8 + i % 5);
                plan.add(new Planned(index, codec, partition, nextOffset[partition]++,
                        i == 0 ? null : bytes("key-" + codec + "-" + i), bytes(value),
                        new String[][] {{"codec", codec}, {"index", Integer.toString(index)}},
                        baseTimestamp + index));
            }
        }
        for (int p = 0; p < PARTITIONS; p++) {
            logEndOffsets.put(p, nextOffset[p]);
            partitions.add(new TopicPartition(topic, p));
        }
    }

    static byte[] bytes(String s) { return s.getBytes(StandardCharsets.UTF_8); }

    static String show(byte[] b) {
        if (b == null) return "null";
        String s = new String(b, StandardCharsets.UTF_8);
        return s.length() > 40 ? "'" + s.substring(0, 40) + "'...(" + b.length + " bytes)" : "'" + s + "'";
    }

    void say(String message) { System.out.println("[" + client + "] " + message); System.out.flush(); }

    /** A feature passes when every step naming it passed, fails when one failed. */
    void record(List<String> names, boolean passed) {
        for (String name : names) {
            if (!passed) features.put(name, "fail");
            else features.putIfAbsent(name, "pass");
        }
    }

    /** Something later steps depend on: a failure ends the run. */
    void step(String name, List<String> exercised, Body body) throws Exception {
        say(name + " ...");
        long began = System.nanoTime();
        try {
            body.run();
        } catch (Exception error) {
            record(exercised, false);
            throw error;
        }
        record(exercised, true);
        say(String.format("%s: ok (%.2fs)", name, (System.nanoTime() - began) / 1e9));
    }

    /** A verification nothing later depends on: a failure is recorded and the run goes on. */
    void check(String name, List<String> exercised, Body body) {
        say(name + " ...");
        long began = System.nanoTime();
        try {
            body.run();
            record(exercised, true);
            say(String.format("%s: ok (%.2fs)", name, (System.nanoTime() - began) / 1e9));
        } catch (CheckFailed failure) {
            record(exercised, false);
            say(name + ": FAILED: " + failure.getMessage());
            failures.add(name + ": " + failure.getMessage());
        } catch (Exception error) {
            record(exercised, false);
            say(name + ": FAILED with " + error);
            error.printStackTrace(System.out);
            failures.add(name + ": " + error);
        }
    }

    /** The machine-readable last line `kafka-wire compat` reads (same format as acceptance.py's). */
    String featuresLine() {
        StringBuilder json = new StringBuilder("FEATURES-JSON: {\"client\": \"" + client + "\", \"passed\": "
                + failures.isEmpty() + ", \"features\": {");
        String separator = "";
        for (Map.Entry<String, String> feature : features.entrySet()) {
            json.append(separator).append('"').append(feature.getKey()).append("\": \"").append(feature.getValue()).append('"');
            separator = ", ";
        }
        return json.append("}}").toString();
    }

    static void expectOffsets(String what, Map<Integer, Long> got, Map<Integer, Long> want) throws CheckFailed {
        if (!new TreeMap<>(got).equals(new TreeMap<>(want))) {
            throw new CheckFailed(what + ": got " + new TreeMap<>(got) + ", expected " + new TreeMap<>(want));
        }
    }

    Map<Integer, Long> everywhere(long offset) {
        Map<Integer, Long> m = new TreeMap<>();
        for (int p = 0; p < PARTITIONS; p++) m.put(p, offset);
        return m;
    }

    long probeTimestamp() { return baseTimestamp + plan.size() / 2 + 1; }

    long afterLastTimestamp() { return baseTimestamp + plan.size() + 60_000; }

    /** Per partition, the first offset whose timestamp is >= ts (-1: none), as ListOffsets answers. */
    Map<Integer, Long> offsetsAtOrAfter(long ts) {
        Map<Integer, Long> m = everywhere(-1);
        for (Planned r : plan) {
            if (r.timestamp >= ts && m.get(r.partition) == -1) m.put(r.partition, r.offset);
        }
        return m;
    }

    Properties common() {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, "kafka-wire-check");
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) timeoutMs);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) timeoutMs);
        return props;
    }

    void run() throws Exception {
        say("topic " + topic + ", " + plan.size() + " records, codecs " + String.join(",", codecs));
        try (Admin admin = Admin.create(common())) {
            step("create topic (" + PARTITIONS + " partitions)", List.of("admin"), () ->
                admin.createTopics(List.of(new NewTopic(topic, PARTITIONS, (short) 1))).all()
                        .get(timeoutMs, TimeUnit.MILLISECONDS));

            step("describeTopics", List.of("metadata"), () -> {
                long deadline = System.currentTimeMillis() + timeoutMs;
                while (true) {
                    TopicDescription description = admin.describeTopics(List.of(topic)).allTopicNames()
                            .get(timeoutMs, TimeUnit.MILLISECONDS).get(topic);
                    boolean ready = description.partitions().size() == PARTITIONS;
                    for (TopicPartitionInfo info : description.partitions()) {
                        ready &= info.leader() != null && !info.leader().isEmpty();
                    }
                    if (ready) {
                        say("topic id " + description.topicId() + ", " + description.partitions().size() + " partitions");
                        return;
                    }
                    if (System.currentTimeMillis() > deadline) {
                        throw new CheckFailed("topic has no leader for every partition: " + description);
                    }
                    Thread.sleep(200);
                }
            });

            for (String codec : codecs) {
                List<Planned> records = new ArrayList<>();
                for (Planned r : plan) if (r.codec.equals(codec)) records.add(r);
                step("produce " + records.size() + " records, compression " + codec
                        + " (default producer: idempotent, acks=all)", List.of("produce:" + codec, "idempotence"),
                        () -> produce(codec, records));
            }

            for (String isolation : List.of("read_uncommitted", "read_committed")) {
                check("read back everything (assign + seekToBeginning, no group.id, " + isolation + ")",
                        List.of("fetch"), () -> readBack(isolation));
            }

            try (KafkaConsumer<byte[], byte[]> consumer = newConsumer("read_uncommitted")) {
                check("consumer.beginningOffsets", List.of("list-offsets"), () -> expectOffsets("beginningOffsets",
                        byPartition(consumer.beginningOffsets(partitions)), everywhere(0)));
                check("consumer.endOffsets", List.of("list-offsets"), () -> expectOffsets("endOffsets",
                        byPartition(consumer.endOffsets(partitions)), logEndOffsets));
                check("consumer.offsetsForTimes", List.of("list-offsets"), () -> {
                    expectOffsets("offsetsForTimes(" + probeTimestamp() + ")",
                            found(consumer.offsetsForTimes(timestampQuery(probeTimestamp()))),
                            offsetsAtOrAfter(probeTimestamp()));
                    expectOffsets("offsetsForTimes(after the last record)",
                            found(consumer.offsetsForTimes(timestampQuery(afterLastTimestamp()))), everywhere(-1));
                });
            }

            check("admin.listOffsets earliest", List.of("list-offsets"), () ->
                    expectOffsets("earliest", listOffsets(admin, OffsetSpec.earliest()), everywhere(0)));
            check("admin.listOffsets latest", List.of("list-offsets"), () ->
                    expectOffsets("latest", listOffsets(admin, OffsetSpec.latest()), logEndOffsets));
            check("admin.listOffsets forTimestamp", List.of("list-offsets"), () -> {
                expectOffsets("forTimestamp(" + probeTimestamp() + ")",
                        listOffsets(admin, OffsetSpec.forTimestamp(probeTimestamp())), offsetsAtOrAfter(probeTimestamp()));
                expectOffsets("forTimestamp(after the last record)",
                        listOffsets(admin, OffsetSpec.forTimestamp(afterLastTimestamp())), everywhere(-1));
            });

            step("deleteTopics", List.of("admin"), () -> {
                admin.deleteTopics(List.of(topic)).all().get(timeoutMs, TimeUnit.MILLISECONDS);
                long deadline = System.currentTimeMillis() + timeoutMs;
                while (admin.listTopics().names().get(timeoutMs, TimeUnit.MILLISECONDS).contains(topic)) {
                    if (System.currentTimeMillis() > deadline) throw new CheckFailed("topic still listed after delete");
                    Thread.sleep(200);
                }
            });
        }
    }

    void produce(String codec, List<Planned> records) throws Exception {
        Properties props = common();
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
        props.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, (int) timeoutMs);
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) Math.max(timeoutMs, 10_000));
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) Math.min(timeoutMs, 9_000));
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            List<Future<RecordMetadata>> acks = new ArrayList<>();
            for (Planned r : records) {
                ProducerRecord<byte[], byte[]> record =
                        new ProducerRecord<>(topic, r.partition, r.timestamp, r.key, r.value);
                for (String[] h : r.headers) record.headers().add(h[0], bytes(h[1]));
                acks.add(producer.send(record));
            }
            producer.flush();
            for (int i = 0; i < records.size(); i++) {
                Planned r = records.get(i);
                RecordMetadata metadata = acks.get(i).get(timeoutMs, TimeUnit.MILLISECONDS);
                if (metadata.partition() != r.partition || metadata.offset() != r.offset) {
                    throw new CheckFailed("record " + r.index + " (" + codec + ") acked at partition "
                            + metadata.partition() + " offset " + metadata.offset() + ", expected partition "
                            + r.partition + " offset " + r.offset);
                }
                if (metadata.timestamp() != r.timestamp) {
                    throw new CheckFailed("record " + r.index + " acked with timestamp " + metadata.timestamp()
                            + ", expected its CreateTime " + r.timestamp);
                }
            }
        }
    }

    KafkaConsumer<byte[], byte[]> newConsumer(String isolation) {
        Properties props = common();
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        return new KafkaConsumer<>(props);  // no group.id: assign only, as Spark's executors do
    }

    void readBack(String isolation) throws Exception {
        Map<String, Planned> byPosition = new HashMap<>();
        for (Planned r : plan) byPosition.put(r.partition + "@" + r.offset, r);
        List<String> problems = new ArrayList<>();
        int read = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = newConsumer(isolation)) {
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (read < plan.size() && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> got : consumer.poll(Duration.ofMillis(500))) {
                    read++;
                    Planned want = byPosition.remove(got.partition() + "@" + got.offset());
                    String where = "partition " + got.partition() + " offset " + got.offset();
                    if (want == null) {
                        problems.add("unexpected or repeated record at " + where);
                        continue;
                    }
                    where += " (record " + want.index + ", " + want.codec + ")";
                    if (!Arrays.equals(got.key(), want.key)) {
                        problems.add(where + ": key " + show(got.key()) + ", expected " + show(want.key));
                    }
                    if (!Arrays.equals(got.value(), want.value)) {
                        problems.add(where + ": value " + show(got.value()) + ", expected " + show(want.value));
                    }
                    List<String> gotHeaders = new ArrayList<>();
                    for (Header h : got.headers()) gotHeaders.add(h.key() + "=" + show(h.value()));
                    List<String> wantHeaders = new ArrayList<>();
                    for (String[] h : want.headers) wantHeaders.add(h[0] + "=" + show(bytes(h[1])));
                    if (!gotHeaders.equals(wantHeaders)) {
                        problems.add(where + ": headers " + gotHeaders + ", expected " + wantHeaders);
                    }
                    if (got.timestamp() != want.timestamp || !"CreateTime".equals(got.timestampType().toString())) {
                        problems.add(where + ": timestamp " + got.timestamp() + " (" + got.timestampType()
                                + "), expected " + want.timestamp + " (CreateTime)");
                    }
                }
            }
        }
        say("read " + read + " of " + plan.size() + " records");
        if (!byPosition.isEmpty()) problems.add(byPosition.size() + " records never read back");
        if (!problems.isEmpty()) {
            throw new CheckFailed("read-back mismatch (" + problems.size() + " problems):\n  "
                    + String.join("\n  ", problems.subList(0, Math.min(20, problems.size()))));
        }
    }

    Map<TopicPartition, Long> timestampQuery(long ts) {
        Map<TopicPartition, Long> query = new HashMap<>();
        for (TopicPartition tp : partitions) query.put(tp, ts);
        return query;
    }

    static Map<Integer, Long> byPartition(Map<TopicPartition, Long> offsets) {
        Map<Integer, Long> m = new TreeMap<>();
        offsets.forEach((tp, offset) -> m.put(tp.partition(), offset));
        return m;
    }

    /** offsetsForTimes answers null for a partition with no record that late. */
    static Map<Integer, Long> found(Map<TopicPartition, OffsetAndTimestamp> offsets) {
        Map<Integer, Long> m = new TreeMap<>();
        offsets.forEach((tp, found) -> m.put(tp.partition(), found == null ? -1L : found.offset()));
        return m;
    }

    Map<Integer, Long> listOffsets(Admin admin, OffsetSpec spec) throws Exception {
        Map<TopicPartition, OffsetSpec> query = new HashMap<>();
        for (TopicPartition tp : partitions) query.put(tp, spec);
        Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> answer =
                admin.listOffsets(query).all().get(timeoutMs, TimeUnit.MILLISECONDS);
        Map<Integer, Long> m = new TreeMap<>();
        answer.forEach((tp, info) -> m.put(tp.partition(), info.offset()));
        return m;
    }

    public static void main(String[] args) {
        if (args.length < 1) {
            System.err.println("usage: ClientCheck HOST:PORT [--records N] [--codecs none,gzip,...] [--timeout SECONDS]");
            System.exit(2);
        }
        int records = 40;
        List<String> codecs = List.of("none", "gzip", "snappy", "lz4", "zstd");
        long timeoutMs = 30_000;
        for (int i = 1; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--records": records = Integer.parseInt(args[i + 1]); break;
                case "--codecs": codecs = List.of(args[i + 1].split(",")); break;
                case "--timeout": timeoutMs = (long) (Double.parseDouble(args[i + 1]) * 1000); break;
                default: System.err.println("unknown option " + args[i]); System.exit(2);
            }
        }
        long started = System.nanoTime();
        ClientCheck check = new ClientCheck(args[0], codecs, records, timeoutMs);
        try {
            check.run();
        } catch (CheckFailed failure) {
            check.failures.add(failure.getMessage());
            check.say("FAILED: " + failure.getMessage());
        } catch (Exception error) {
            check.failures.add(error.toString());
            check.say("FAILED with an exception:");
            error.printStackTrace(System.out);
        }
        double elapsed = (System.nanoTime() - started) / 1e9;
        if (!check.failures.isEmpty()) {
            check.say(String.format("%d CHECK(S) FAILED (%.1fs):", check.failures.size(), elapsed));
            for (String failure : check.failures) check.say("  - " + failure.split("\n")[0]);
            System.out.println(check.featuresLine());
            System.out.flush();
            Runtime.getRuntime().halt(1);  // client threads must not keep a failed run alive
        }
        check.say(String.format("ALL CHECKS PASSED (%.1fs)", elapsed));
        System.out.println(check.featuresLine());
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }
}
