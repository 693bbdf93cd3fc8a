import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeProducersResult;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.AppInfoParser;

/**
 * Java kafka-clients' transactions against a broker (tests/integration/test_transactions.py runs it).
 * One source compiles against kafka-clients 3.9.0 and 4.3.0 (public API only).
 *
 *   produce BOOTSTRAP TOPIC TXID        create TOPIC (2 partitions); commit c1-*, abort a-*, commit c2-*;
 *                                       print the values as "COMMITTED v" / "ABORTED v" lines
 *   read BOOTSTRAP ISOLATION TOPIC...   read each topic from the beginning to its end offsets (assign,
 *                                       no group), ISOLATION read_committed, read_uncommitted or both;
 *                                       print "VALUE isolation topic partition offset v"
 *   admin BOOTSTRAP TOPIC TXID          describeTransactions/listTransactions/describeProducers and
 *                                       read_committed listOffsets; print what they say
 *   zombie BOOTSTRAP TOPIC TXID         a second producer with the same transactional.id fences the
 *                                       first; the first's writes and commit must fail as fenced
 *   copy BOOTSTRAP IN OUT GROUP TXID N [K]  consume-transform-produce: out gets "copy-" + each value of
 *                                       in, offsets committed in the transaction; "IN-TXN k" is printed
 *                                       while transaction k is open (records sent, not committed);
 *                                       transaction K stays open until stdin closes (to be killed)
 *   hold BOOTSTRAP TOPIC TXID TIMEOUT   commit before-*, then send held-* in an open transaction,
 *                                       print HELD, and commit when stdin says "commit"
 * Lines "OK ..." report checks; the program exits 1 on a failed check.
 */
public final class TxnCheck {
    static final Duration TIMEOUT = Duration.ofSeconds(30);

    static void fail(String message) {
        System.out.println("FAILED " + message);
        System.out.flush();
        System.exit(1);
    }

    static Properties producerProps(String bootstrap, String txid) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txid);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        return p;
    }

    static Properties consumerProps(String bootstrap, String isolation) {
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        return c;
    }

    static Admin admin(String bootstrap) {
        Properties a = new Properties();
        a.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return Admin.create(a);
    }

    public static void main(String[] args) throws Exception {
        System.out.println("kafka-clients " + AppInfoParser.getVersion());
        switch (args[0]) {
            case "produce": produce(args[1], args[2], args[3]); break;
            case "read":
                for (String isolation : args[2].equals("both") ? List.of("read_committed", "read_uncommitted")
                        : List.of(args[2])) {
                    read(args[1], isolation, List.of(args).subList(3, args.length));
                }
                break;
            case "admin": admin(args[1], args[2], args[3]); break;
            case "zombie": zombie(args[1], args[2], args[3]); break;
            case "copy":
                copy(args[1], args[2], args[3], args[4], args[5], Integer.parseInt(args[6]),
                     args.length > 7 ? Integer.parseInt(args[7]) : -1);
                break;
            case "hold": hold(args[1], args[2], args[3], args[4]); break;
            default: fail("unknown mode " + args[0]);
        }
        System.out.println("DONE");
        System.out.flush();
        System.exit(0);
    }

    static void createTopic(String bootstrap, String topic, int partitions) throws Exception {
        try (Admin admin = admin(bootstrap)) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
        }
    }

    static void produce(String bootstrap, String topic, String txid) throws Exception {
        createTopic(bootstrap, topic, 2);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps(bootstrap, txid))) {
            producer.initTransactions();
            sendAll(producer, topic, "c1-", 10, true);
            sendAll(producer, topic, "a-", 10, false);
            sendAll(producer, topic, "c2-", 10, true);
        }
    }

    static void sendAll(KafkaProducer<String, String> producer, String topic, String prefix, int n, boolean commit)
            throws Exception {
        producer.beginTransaction();
        for (int i = 0; i < n; i++) {
            String value = prefix + i;
            producer.send(new ProducerRecord<>(topic, i % 2, "k" + i, value)).get();
            System.out.println((commit ? "COMMITTED " : "ABORTED ") + value);
        }
        if (commit) {
            producer.commitTransaction();
        } else {
            producer.abortTransaction();
        }
    }

    /** Every record of the topics up to their end offsets at the start (read with `isolation`). */
    static void read(String bootstrap, String isolation, List<String> topics) {
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps(bootstrap, isolation))) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (String topic : topics) {
                consumer.partitionsFor(topic, TIMEOUT).forEach(p -> partitions.add(new TopicPartition(topic, p.partition())));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            // For read_committed the end offsets are the last stable offsets.
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions, TIMEOUT);
            long deadline = System.currentTimeMillis() + TIMEOUT.toMillis();
            while (true) {
                boolean done = true;
                for (TopicPartition tp : partitions) {
                    if (consumer.position(tp, TIMEOUT) < end.get(tp)) done = false;
                }
                if (done) break;
                if (System.currentTimeMillis() > deadline) fail("timed out reading " + topics + " to " + end);
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    System.out.println("VALUE " + isolation + " " + r.topic() + " " + r.partition() + " " + r.offset()
                            + " " + r.value());
                }
            }
            System.out.println("END " + end);
        }
    }

    static void admin(String bootstrap, String topic, String txid) throws Exception {
        try (Admin admin = admin(bootstrap)) {
            try {
                TransactionDescription d = admin.describeTransactions(List.of(txid)).description(txid).get();
                System.out.println("DESCRIBE " + txid + " " + d.state() + " producer " + d.producerId() + " epoch "
                        + d.producerEpoch() + " timeout " + d.transactionTimeoutMs());
            } catch (ExecutionException e) {
                System.out.println("DESCRIBE-ERROR " + txid + " " + e.getCause().getClass().getSimpleName());
            }
            for (TransactionListing l : admin.listTransactions().all().get()) {
                System.out.println("LISTED " + l.transactionalId() + " " + l.state() + " " + l.producerId());
            }
            TopicPartition tp = new TopicPartition(topic, 0);
            DescribeProducersResult producers = admin.describeProducers(List.of(tp));
            for (ProducerState s : producers.partitionResult(tp).get().activeProducers()) {
                System.out.println("PRODUCER " + s.producerId() + " epoch " + s.producerEpoch() + " txn "
                        + s.currentTransactionStartOffset());
            }
            Map<TopicPartition, OffsetSpec> latest = Map.of(tp, OffsetSpec.latest());
            long committed = admin.listOffsets(latest, new ListOffsetsOptions(IsolationLevel.READ_COMMITTED))
                    .partitionResult(tp).get().offset();
            long uncommitted = admin.listOffsets(latest, new ListOffsetsOptions(IsolationLevel.READ_UNCOMMITTED))
                    .partitionResult(tp).get().offset();
            System.out.println("LATEST read_committed " + committed + " read_uncommitted " + uncommitted);
        }
    }

    static boolean fenced(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof ProducerFencedException || t instanceof InvalidProducerEpochException) return true;
        }
        return false;
    }

    static void zombie(String bootstrap, String topic, String txid) throws Exception {
        createTopic(bootstrap, topic, 1);
        KafkaProducer<String, String> zombie = new KafkaProducer<>(producerProps(bootstrap, txid));
        zombie.initTransactions();
        zombie.beginTransaction();
        zombie.send(new ProducerRecord<>(topic, 0, "k", "zombie-0")).get();
        System.out.println("zombie wrote zombie-0 in an open transaction");

        KafkaProducer<String, String> fresh = new KafkaProducer<>(producerProps(bootstrap, txid));
        fresh.initTransactions();  // aborts the zombie's transaction and bumps the epoch
        fresh.beginTransaction();
        fresh.send(new ProducerRecord<>(topic, 0, "k", "fresh-0")).get();
        fresh.commitTransaction();
        System.out.println("fresh producer committed fresh-0");

        try {
            zombie.send(new ProducerRecord<>(topic, 0, "k", "zombie-1")).get();
            zombie.commitTransaction();
            fail("the zombie producer was not fenced");
        } catch (Exception e) {
            if (!fenced(e)) fail("the zombie failed with something else than fencing: " + e);
            System.out.println("OK zombie fenced: " + e.getClass().getSimpleName()
                    + (e.getCause() != null ? " (" + e.getCause().getClass().getSimpleName() + ")" : ""));
        }
        zombie.close(Duration.ZERO);
        fresh.close();
    }

    static void copy(String bootstrap, String in, String out, String group, String txid, int total, int pauseAt)
            throws Exception {
        Properties pp = producerProps(bootstrap, txid);
        KafkaProducer<String, String> producer = new KafkaProducer<>(pp);
        producer.initTransactions();
        Properties cp = consumerProps(bootstrap, "read_committed");
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        cp.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, txid + "-instance");
        cp.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "25");
        cp.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000");
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp);
        consumer.subscribe(List.of(in));
        int transactions = 0;
        long deadline = System.currentTimeMillis() + 120_000;
        while (System.currentTimeMillis() < deadline) {
            ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
            if (records.isEmpty()) {
                if (caughtUp(consumer, total)) break;
                continue;
            }
            producer.beginTransaction();
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            for (ConsumerRecord<String, String> r : records) {
                producer.send(new ProducerRecord<>(out, r.key(), "copy-" + r.value()));
                offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
            }
            producer.flush();
            transactions++;
            System.out.println("IN-TXN " + transactions + " " + records.count());
            System.out.flush();
            if (transactions == pauseAt) {
                System.in.read();  // the test kills us here, with the transaction open
            }
            producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
            producer.commitTransaction();
            System.out.println("COMMITTED " + transactions);
            System.out.flush();
        }
        if (!caughtUp(consumer, total)) fail("did not copy all " + total + " records in time");
        consumer.close();
        producer.close();
    }

    /** Whether the group's committed offsets cover all `total` records of the input. */
    static boolean caughtUp(KafkaConsumer<String, String> consumer, int total) {
        Collection<TopicPartition> assigned = consumer.assignment();
        if (assigned.isEmpty()) return false;
        Map<TopicPartition, Long> end = consumer.endOffsets(assigned, TIMEOUT);
        long sum = 0;
        for (TopicPartition tp : assigned) {
            long position = consumer.position(tp, TIMEOUT);
            if (position < end.get(tp)) return false;
            sum += end.get(tp);
        }
        return sum >= total;
    }

    static void hold(String bootstrap, String topic, String txid, String timeoutMs) throws Exception {
        createTopic(bootstrap, topic, 2);
        Properties pp = producerProps(bootstrap, txid);
        pp.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, timeoutMs);
        pp.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "120000");
        pp.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
        pp.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "120000");
        KafkaProducer<String, String> producer = new KafkaProducer<>(pp);
        producer.initTransactions();
        sendAll(producer, topic, "before-", 4, true);
        producer.beginTransaction();
        for (int i = 0; i < 4; i++) {
            producer.send(new ProducerRecord<>(topic, i % 2, "k" + i, "held-" + i)).get();
        }
        System.out.println("HELD");
        System.out.flush();
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line = stdin.readLine();
        if (line != null && line.trim().equals("commit")) {
            producer.commitTransaction();
            System.out.println("OK committed after the broker restart");
        }
        producer.close();
    }
}
