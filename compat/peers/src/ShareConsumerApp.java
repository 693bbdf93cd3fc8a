import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * One member of a share group (KIP-932): Kafka's own KafkaShareConsumer in explicit acknowledgement
 * mode, for tests/integration/test_share_java.py, which runs several of these processes against
 * kafka-wire and against Apache Kafka and checks what each was given.
 *
 * Usage: ShareConsumerApp bootstrap group topic mode [consumer.config=value ...]
 *
 * Modes:
 *   rules  acknowledges every record of a poll by the first word of its value, then commitSync():
 *          "accept" ACCEPT; "release" RELEASE on its first delivery, ACCEPT after; "reject" REJECT;
 *          "poison" RELEASE every time (the group's delivery count limit archives it).
 *   hold   polls until it is given records, then neither acknowledges them nor polls again: it keeps
 *          their acquisition locks until these run out (or it is SIGKILLed). Its heartbeats go on.
 *
 * Prints on stdout, one line each, for the test to read:
 *   SHARE RECORD partition offset deliveryCount value    each record a poll returned
 *   SHARE ACKED partition offset TYPE                    (ACCEPT, RELEASE, REJECT) once commitSync() succeeded for it
 *   SHARE COMMIT-FAILED partition error                  when commitSync() reported an error
 *   SHARE HOLDING n                                       hold mode: keeps n records
 * SIGTERM closes the consumer (leaving the group) and exits.
 */
public final class ShareConsumerApp {
    private static volatile boolean running = true;

    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: ShareConsumerApp bootstrap group topic rules|hold [config=value ...]");
            System.exit(2);
        }
        String mode = args[3];
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("group.id", args[1]);
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        props.put("share.acknowledgement.mode", "explicit");
        for (int i = 4; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            props.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        // start.gate=PATH (ours, not a consumer config): subscribe only once PATH exists, so that several
        // members whose JVMs started at different speeds join the group within milliseconds.
        String gate = (String) props.remove("start.gate");

        KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(props);
        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            running = false;
            consumer.wakeup();
            try {
                closed.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException ignored) {
                // exiting anyway
            }
        }));

        try {
            if (gate != null) {
                say("READY");
                while (running && !Files.exists(Path.of(gate))) {
                    Thread.sleep(20);
                }
            }
            consumer.subscribe(List.of(args[2]));
            if (mode.equals("hold")) {
                hold(consumer);
            } else if (mode.equals("rules")) {
                byRules(consumer);
            } else {
                throw new IllegalArgumentException("unknown mode " + mode);
            }
        } catch (WakeupException | InterruptedException stopping) {
            // SIGTERM
        } finally {
            try {
                consumer.close(Duration.ofSeconds(20));
            } finally {
                closed.countDown();
            }
        }
    }

    private static void byRules(KafkaShareConsumer<String, String> consumer) {
        while (running) {
            ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
            if (records.isEmpty()) {
                continue;
            }
            StringBuilder acked = new StringBuilder();
            for (ConsumerRecord<String, String> record : records) {
                short count = deliveryCount(record);
                say("RECORD " + record.partition() + " " + record.offset() + " " + count + " " + record.value());
                AcknowledgeType type = decide(record.value(), count);
                consumer.acknowledge(record, type);
                acked.append("SHARE ACKED ").append(record.partition()).append(' ').append(record.offset())
                        .append(' ').append(type.name()).append('\n');
            }
            Map<TopicIdPartition, Optional<KafkaException>> result = consumer.commitSync(Duration.ofSeconds(30));
            boolean failed = false;
            for (Map.Entry<TopicIdPartition, Optional<KafkaException>> entry : result.entrySet()) {
                if (entry.getValue().isPresent()) {
                    failed = true;
                    say("COMMIT-FAILED " + entry.getKey().partition() + " " + entry.getValue().get());
                }
            }
            if (!failed) {
                System.out.print(acked);
                System.out.flush();
            }
        }
    }

    private static AcknowledgeType decide(String value, short deliveryCount) {
        String word = value == null ? "" : value.split(" ", 2)[0];
        switch (word) {
            case "release":
                return deliveryCount <= 1 ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT;
            case "reject":
                return AcknowledgeType.REJECT;
            case "poison":
                return AcknowledgeType.RELEASE;
            default:
                return AcknowledgeType.ACCEPT;
        }
    }

    private static void hold(KafkaShareConsumer<String, String> consumer) throws InterruptedException {
        ConsumerRecords<String, String> records = ConsumerRecords.empty();
        while (running && records.isEmpty()) {
            records = consumer.poll(Duration.ofMillis(500));
        }
        for (ConsumerRecord<String, String> record : records) {
            say("RECORD " + record.partition() + " " + record.offset() + " " + deliveryCount(record) + " " + record.value());
        }
        say("HOLDING " + records.count());
        while (running) {
            Thread.sleep(200);
        }
    }

    /** ConsumerRecord.deliveryCount() (Kafka 4.0+); this file is compiled against 3.9 as well, whose
     * ConsumerRecord has no such method (-1 there). */
    private static short deliveryCount(ConsumerRecord<?, ?> record) {
        try {
            Object count = ConsumerRecord.class.getMethod("deliveryCount").invoke(record);
            return ((Optional<?>) count).map(c -> ((Number) c).shortValue()).orElse((short) -1);
        } catch (ReflectiveOperationException e) {
            return -1;
        }
    }

    private static void say(String line) {
        System.out.println("SHARE " + line);
        System.out.flush();
    }
}
