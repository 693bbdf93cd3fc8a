import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The Java client's side of compat/idempotent_epoch_bump.py: an idempotent acks=all producer that
 * reads commands on stdin, "send PARTITION VALUE", "flush" and "close", and prints
 * "REPORT VALUE ok" or "REPORT VALUE <exception class>" for each delivery.
 *
 * Usage: EpochBumpProducer BOOTSTRAP TOPIC DELIVERY_TIMEOUT_MS REQUEST_TIMEOUT_MS
 */
public class EpochBumpProducer {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, args[2]);
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, args[3]);
        props.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, "100");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        String topic = args[1];
        BufferedReader commands = new BufferedReader(new InputStreamReader(System.in));
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            String line;
            while ((line = commands.readLine()) != null) {
                String[] words = line.trim().split(" ");
                if (words[0].equals("send")) {
                    String value = words[2];
                    producer.send(new ProducerRecord<>(topic, Integer.parseInt(words[1]), null, value),
                        (metadata, error) -> {
                            synchronized (System.out) {
                                System.out.println("REPORT " + value + " "
                                    + (error == null ? "ok" : error.getClass().getSimpleName()));
                                System.out.flush();
                            }
                        });
                } else if (words[0].equals("flush")) {
                    producer.flush();
                    System.out.println("FLUSHED");
                    System.out.flush();
                } else if (words[0].equals("close")) {
                    break;
                }
            }
        }
    }
}
