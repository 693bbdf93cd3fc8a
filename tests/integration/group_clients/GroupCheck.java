import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Java kafka-clients in a consumer group (classic protocol) against a broker: two KafkaConsumers
 * share a 3-partition topic while a member joins and leaves, commitSync after each poll; every
 * record is consumed, and one is consumed twice only when its commit failed. Admin then sees the
 * group (listConsumerGroups, describeConsumerGroups, listConsumerGroupOffsets) and deletes it.
 *
 * Public client API only: compiles against kafka-clients 3.9.0 and 4.3.0.
 * Usage: java -cp JARS:CLASSES GroupCheck HOST:PORT ASSIGNOR(range|cooperative-sticky) [TIMEOUT_S]
 * Prints ALL CHECKS PASSED and exits 0, or prints the failure and exits 1.
 */
public final class GroupCheck {
    static final int PARTITIONS = 3;
    static final int RECORDS = 300;

    final String bootstrap;
    final String assignor;
    final long timeoutMs;
    final String topic = "java-group-" + UUID.randomUUID();
    final String group = topic;
    final Map<Integer, List<String>> consumed = new ConcurrentHashMap<>();
    final Set<Integer> uncommitted = ConcurrentHashMap.newKeySet();

    GroupCheck(String bootstrap, String assignor, long timeoutMs) {
        this.bootstrap = bootstrap; this.assignor = assignor; this.timeoutMs = timeoutMs;
    }

    final class Member extends Thread {
        volatile boolean stop;
        volatile Set<Integer> assignment = Collections.emptySet();
        volatile Throwable failure;

        Member(String name) { super(name); setDaemon(true); }

        @Override public void run() {
            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            p.put(ConsumerConfig.CLIENT_ID_CONFIG, getName());
            p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000");
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
            p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, "range".equals(assignor)
                ? "org.apache.kafka.clients.consumer.RangeAssignor"
                : "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
            try (KafkaConsumer<String, String> consumer =
                     new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
                consumer.subscribe(Collections.singletonList(topic));
                while (!stop) {
                    ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(100));
                    List<Integer> batch = new ArrayList<>();
                    for (ConsumerRecord<String, String> r : records) {
                        int value = Integer.parseInt(r.value());
                        batch.add(value);
                        consumed.computeIfAbsent(value, k -> Collections.synchronizedList(new ArrayList<>())).add(getName());
                    }
                    if (!batch.isEmpty()) {
                        try {
                            consumer.commitSync();
                        } catch (CommitFailedException | org.apache.kafka.common.errors.RebalanceInProgressException e) {
                            uncommitted.addAll(batch);
                        }
                    }
                    Set<Integer> now = new TreeSet<>();
                    for (TopicPartition tp : consumer.assignment()) now.add(tp.partition());
                    assignment = now;
                }
            } catch (Throwable t) {
                failure = t;
            }
        }

        void finish() throws Exception {
            stop = true;
            join(timeoutMs);
            if (failure != null) throw new Exception(getName() + " failed", failure);
        }
    }

    void waitFor(String what, BooleanSupplier condition) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!condition.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) throw new Exception("timed out waiting for " + what);
            Thread.sleep(50);
        }
    }

    static void check(boolean ok, String what) throws Exception {
        if (!ok) throw new Exception("check failed: " + what);
    }

    void produce(KafkaProducer<String, String> producer, int from, int to) throws Exception {
        for (int i = from; i < to; i++) producer.send(new ProducerRecord<>(topic, i % PARTITIONS, null, Integer.toString(i)));
        producer.flush();
    }

    void run() throws Exception {
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(ap);
             KafkaProducer<String, String> producer = new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer())) {
            admin.createTopics(Collections.singletonList(new NewTopic(topic, PARTITIONS, (short) 1))).all()
                .get(timeoutMs, TimeUnit.MILLISECONDS);
            produce(producer, 0, RECORDS / 3);
            Member a = new Member("a");
            a.start();
            waitFor("member a to own all partitions", () -> a.assignment.size() == PARTITIONS);
            Member b = new Member("b");
            b.start();
            waitFor("a and b to share the partitions",
                () -> !a.assignment.isEmpty() && !b.assignment.isEmpty() && a.assignment.size() + b.assignment.size() == PARTITIONS);
            produce(producer, RECORDS / 3, 2 * RECORDS / 3);
            ConsumerGroupDescription described = admin.describeConsumerGroups(Collections.singletonList(group))
                .describedGroups().get(group).get(timeoutMs, TimeUnit.MILLISECONDS);
            check("Stable".equalsIgnoreCase(String.valueOf(described.state())), "group Stable, was " + described.state());
            check(described.members().size() == 2, "two members described: " + described.members());
            int assigned = 0;
            for (MemberDescription m : described.members()) assigned += m.assignment().topicPartitions().size();
            check(assigned == PARTITIONS, "described assignments cover the partitions: " + described.members());
            b.finish();
            waitFor("a to take every partition back", () -> a.assignment.size() == PARTITIONS);
            produce(producer, 2 * RECORDS / 3, RECORDS);
            waitFor("every record to be consumed", () -> consumed.size() >= RECORDS);
            a.finish();
            for (int i = 0; i < RECORDS; i++) {
                List<String> who = consumed.get(i);
                check(who != null, "record " + i + " consumed");
                check(who.size() == 1 || uncommitted.contains(i), "record " + i + " consumed once, was " + who);
            }
            boolean listed = false;
            for (ConsumerGroupListing g : admin.listConsumerGroups().all().get(timeoutMs, TimeUnit.MILLISECONDS)) {
                if (g.groupId().equals(group)) listed = true;
            }
            check(listed, "listConsumerGroups shows the group");
            described = admin.describeConsumerGroups(Collections.singletonList(group))
                .describedGroups().get(group).get(timeoutMs, TimeUnit.MILLISECONDS);
            check("Empty".equalsIgnoreCase(String.valueOf(described.state())), "group Empty, was " + described.state());
            Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(group)
                .partitionsToOffsetAndMetadata().get(timeoutMs, TimeUnit.MILLISECONDS);
            long total = 0;
            for (OffsetAndMetadata o : offsets.values()) total += o.offset();
            check(offsets.size() == PARTITIONS && total == RECORDS, "committed offsets sum to " + RECORDS + ": " + offsets);
            admin.deleteConsumerGroups(Collections.singletonList(group)).all().get(timeoutMs, TimeUnit.MILLISECONDS);
            for (ConsumerGroupListing g : admin.listConsumerGroups().all().get(timeoutMs, TimeUnit.MILLISECONDS)) {
                check(!g.groupId().equals(group), "deleted group is gone");
            }
        }
    }

    public static void main(String[] args) throws Exception {
        long timeoutMs = (args.length > 2 ? Long.parseLong(args[2]) : 60) * 1000;
        try {
            new GroupCheck(args[0], args[1], timeoutMs).run();
        } catch (Exception e) {
            e.printStackTrace(System.out);
            System.exit(1);
        }
        System.out.println("ALL CHECKS PASSED");
        System.exit(0);
    }
}
