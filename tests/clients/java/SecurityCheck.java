// Java kafka-clients log in (SASL and/or TLS), produce and read back a few records; or, with
// --expect-refusal, check that the broker refuses the login with an authentication error.
//
// Usage: java SecurityCheck HOST:PORT TOPIC PROTOCOL MECHANISM USER PASSWORD CA_PEM [--expect-refusal]
// Prints ALL CHECKS PASSED (or REFUSED AS EXPECTED: ...) and exits 0; exits 1 otherwise.

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class SecurityCheck {
    static final int RECORDS = 5;

    public static void main(String[] argv) throws Exception {
        String bootstrap = argv[0], topic = argv[1], protocol = argv[2], mechanism = argv[3];
        String user = argv[4], password = argv[5], ca = argv[6];
        boolean expectRefusal = argv.length > 7 && argv[7].equals("--expect-refusal");

        Properties common = new Properties();
        common.put("bootstrap.servers", bootstrap);
        common.put("security.protocol", protocol);
        if (protocol.startsWith("SASL")) {
            common.put("sasl.mechanism", mechanism);
            String module = mechanism.equals("PLAIN") ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                                                      : "org.apache.kafka.common.security.scram.ScramLoginModule";
            common.put("sasl.jaas.config", module + " required username=\"" + user + "\" password=\"" + password + "\";");
        }
        if (protocol.endsWith("SSL")) {
            common.put("ssl.truststore.type", "PEM");
            common.put("ssl.truststore.location", ca);
        }
        common.put("request.timeout.ms", "20000");

        Properties producerProps = new Properties();
        producerProps.putAll(common);
        producerProps.put("key.serializer", StringSerializer.class.getName());
        producerProps.put("value.serializer", StringSerializer.class.getName());
        producerProps.put("max.block.ms", "20000");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps)) {
            for (int i = 0; i < RECORDS; i++) {
                producer.send(new ProducerRecord<>(topic, 0, "k" + i, "secured value " + i)).get(30, TimeUnit.SECONDS);
            }
        } catch (ExecutionException | AuthenticationException e) {
            Throwable cause = e instanceof ExecutionException ? e.getCause() : e;
            if (expectRefusal && cause instanceof AuthenticationException) {
                System.out.println("REFUSED AS EXPECTED: " + cause.getClass().getSimpleName() + ": " + cause.getMessage());
                return;
            }
            System.out.println("FAILED: " + cause);
            System.exit(1);
        }
        if (expectRefusal) {
            System.out.println("FAILED: the login succeeded");
            System.exit(1);
        }

        Properties consumerProps = new Properties();
        consumerProps.putAll(common);
        consumerProps.put("key.deserializer", StringDeserializer.class.getName());
        consumerProps.put("value.deserializer", StringDeserializer.class.getName());
        consumerProps.put("enable.auto.commit", "false");
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            long deadline = System.currentTimeMillis() + 30000;
            while (got.size() < RECORDS && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
                    got.add(record.key() + "=" + record.value());
                }
            }
        }
        for (int i = 0; i < RECORDS; i++) {
            String expected = "k" + i + "=secured value " + i;
            if (got.size() <= i || !got.get(i).equals(expected)) {
                System.out.println("FAILED: read back " + got);
                System.exit(1);
            }
        }
        System.out.println("ALL CHECKS PASSED");
    }
}
