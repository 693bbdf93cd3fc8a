import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * An idempotent, acks=all producer for the cluster failover tests: sends COUNT records
 * "PREFIX-i" to TOPIC (partition 0), PAUSE_MS apart, and prints "ACK value offset" for each
 * record the cluster acknowledged and "FAIL value error" for each it did not. The test kills
 * the partition leader meanwhile and checks every acknowledged record is there exactly once.
 *
 * Usage: ClusterProducer BOOTSTRAP TOPIC PREFIX COUNT PAUSE_MS
 */
public class ClusterProducer {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], prefix = args[2];
        int count = Integer.parseInt(args[3]);
        long pauseMs = Long.parseLong(args[4]);
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "60000");
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        props.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, "100");
        props.put("metadata.max.age.ms", "1000");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        AtomicInteger failed = new AtomicInteger();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            for (int i = 0; i < count; i++) {
                String value = prefix + "-" + i;
                producer.send(new ProducerRecord<>(topic, 0, null, value), (metadata, error) -> {
                    synchronized (System.out) {
                        if (error == null) {
                            System.out.println("ACK " + value + " " + metadata.offset());
                        } else {
                            failed.incrementAndGet();
                            System.out.println("FAIL " + value + " " + error);
                        }
                        System.out.flush();
                    }
                });
                if (pauseMs > 0) {
                    Thread.sleep(pauseMs);
                }
            }
            producer.flush();
        }
        System.out.println("DONE failed=" + failed.get());
    }
}
