import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * One member of a KIP-848 consumer group (group.protocol=consumer), driven by a test:
 *   ConsumerProtocolMember BOOTSTRAP GROUP TOPIC CLIENT_ID [ASSIGNOR]
 * TOPIC "regex:RE" subscribes to a SubscriptionPattern the broker resolves (kafka-clients 4.x).
 * Prints one line per event: READY, ASSIGNED p,p,..., REVOKED p,p,..., RECORD partition offset value.
 * Commits after every poll and before giving partitions up; closes (leaving the group) when a
 * line "stop" arrives on stdin, then prints CLOSED. A line "positions" prints the fetch position of
 * each assigned partition (POSITIONS p:offset,... with ? for one not known within a second): what a
 * test that waits in vain for records shows to tell a consumer that never fetched a partition.
 * KW_GROUP_PROTOCOL=classic in the environment makes it a classic member instead (JoinGroup/SyncGroup,
 * the client's default assignors, heartbeats every 500 ms), as a consumer not yet rolled to the new protocol.
 */
public class ConsumerProtocolMember {
    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static String partitions(Collection<TopicPartition> parts) {
        List<Integer> ids = new ArrayList<>();
        for (TopicPartition tp : parts) ids.add(tp.partition());
        Collections.sort(ids);
        StringBuilder out = new StringBuilder();
        for (int id : ids) out.append(out.length() == 0 ? "" : ",").append(id);
        return out.length() == 0 ? "-" : out.toString();
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, args[1]);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, args[3]);
        String protocol = System.getenv().getOrDefault("KW_GROUP_PROTOCOL", "consumer");
        props.put("group.protocol", protocol);
        if (protocol.equals("classic")) {
            props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
            props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000");
        } else if (args.length > 4) {
            props.put("group.remote.assignor", args[4]);
        }
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        final boolean[] stop = {false};
        final boolean[] showPositions = {false};
        Thread stdin = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in))) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (line.trim().equals("stop")) break;
                    if (line.trim().equals("positions")) {
                        synchronized (stop) { showPositions[0] = true; }
                    }
                }
            } catch (Exception ignored) {
            }
            synchronized (stop) { stop[0] = true; }
        });
        stdin.setDaemon(true);
        stdin.start();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
                public void onPartitionsRevoked(Collection<TopicPartition> parts) {
                    if (!parts.isEmpty()) {
                        consumer.commitSync();
                        say("REVOKED " + partitions(parts));
                    }
                }
                public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                    say("ASSIGNED " + partitions(consumer.assignment()));
                }
                public void onPartitionsLost(Collection<TopicPartition> parts) {
                    say("LOST " + partitions(parts));
                }
            };
            if (args[2].startsWith("regex:")) {
                // subscribe(SubscriptionPattern): the broker resolves the regex (kafka-clients 4.x only,
                // hence reflection, so that this file also compiles against 3.9).
                Class<?> patternClass = Class.forName("org.apache.kafka.clients.consumer.SubscriptionPattern");
                Object pattern = patternClass.getConstructor(String.class).newInstance(args[2].substring(6));
                KafkaConsumer.class.getMethod("subscribe", patternClass, ConsumerRebalanceListener.class)
                    .invoke(consumer, pattern, listener);
            } else {
                consumer.subscribe(Collections.singletonList(args[2]), listener);
            }
            say("READY");
            while (true) {
                boolean positionsAsked;
                synchronized (stop) {
                    if (stop[0]) break;
                    positionsAsked = showPositions[0];
                    showPositions[0] = false;
                }
                if (positionsAsked) {
                    List<TopicPartition> assigned = new ArrayList<>(consumer.assignment());
                    assigned.sort(Comparator.comparingInt(TopicPartition::partition));
                    StringBuilder out = new StringBuilder();
                    for (TopicPartition tp : assigned) {
                        String position;
                        try {
                            position = Long.toString(consumer.position(tp, Duration.ofSeconds(1)));
                        } catch (Exception e) {
                            position = "?";
                        }
                        out.append(out.length() == 0 ? "" : ",").append(tp.partition()).append(":").append(position);
                    }
                    say("POSITIONS " + (out.length() == 0 ? "-" : out.toString()));
                }
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                for (ConsumerRecord<String, String> r : records) {
                    say("RECORD " + r.partition() + " " + r.offset() + " " + r.value() + " " + r.topic());
                }
                if (!records.isEmpty()) consumer.commitSync();
            }
        }
        say("CLOSED");
    }
}
