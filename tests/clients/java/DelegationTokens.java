import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.CreateDelegationTokenOptions;
import org.apache.kafka.clients.admin.ExpireDelegationTokenOptions;
import org.apache.kafka.clients.admin.RenewDelegationTokenOptions;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.token.delegation.DelegationToken;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The delegation token life cycle as Kafka's docs describe it (and kafka-delegation-tokens.sh
 * calls it): a user creates a token with Admin.createDelegationToken (bob may renew it), a producer
 * and a consumer log in with it (SCRAM, tokenauth=true), the token is described, renewed and
 * expired, and a login with it then fails. Prints one JSON line of what happened.
 * Usage: java -cp JARS:CLASSES DelegationTokens HOST:PORT USER PASSWORD TOPIC
 */
public final class DelegationTokens {
    private static Properties sasl(String bootstrap, String user, String password, boolean token) {
        Properties props = new Properties();
        props.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SASL_PLAINTEXT");
        props.put(SaslConfigs.SASL_MECHANISM, "SCRAM-SHA-256");
        props.put(SaslConfigs.SASL_JAAS_CONFIG, "org.apache.kafka.common.security.scram.ScramLoginModule required"
            + " username=\"" + user + "\" password=\"" + password + "\"" + (token ? " tokenauth=\"true\"" : "") + ";");
        return props;
    }

    private static String produce(String bootstrap, String id, String hmac, String topic, String value) {
        Properties props = sasl(bootstrap, id, hmac, true);
        props.put("key.serializer", StringSerializer.class.getName());
        props.put("value.serializer", StringSerializer.class.getName());
        props.put("max.block.ms", "10000");
        props.put("delivery.timeout.ms", "15000");
        props.put("request.timeout.ms", "10000");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            producer.send(new ProducerRecord<>(topic, 0, "k", value)).get(20, TimeUnit.SECONDS);
            return "ok";
        } catch (ExecutionException e) {
            return e.getCause().getClass().getSimpleName();
        } catch (Exception e) {
            return e.getClass().getSimpleName();
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[3];
        try (Admin admin = Admin.create(sasl(bootstrap, args[1], args[2], false))) {
            DelegationToken token = admin.createDelegationToken(new CreateDelegationTokenOptions()
                .renewers(List.of(new KafkaPrincipal("User", "bob")))).delegationToken().get(30, TimeUnit.SECONDS);
            String id = token.tokenInfo().tokenId();
            String hmac = Base64.getEncoder().encodeToString(token.hmac());
            String produced = produce(bootstrap, id, hmac, topic, "sent with a token");

            Properties consumerProps = sasl(bootstrap, id, hmac, true);
            consumerProps.put("key.deserializer", StringDeserializer.class.getName());
            consumerProps.put("value.deserializer", StringDeserializer.class.getName());
            String consumed = "";
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps)) {
                TopicPartition partition = new TopicPartition(topic, 0);
                consumer.assign(List.of(partition));
                consumer.seekToBeginning(List.of(partition));
                long deadline = System.currentTimeMillis() + 20000;
                while (consumed.isEmpty() && System.currentTimeMillis() < deadline) {
                    ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
                    for (var record : records) {
                        consumed = record.value();
                    }
                }
            }

            List<DelegationToken> described = admin.describeDelegationToken().delegationTokens().get(30, TimeUnit.SECONDS);
            DelegationToken mine = described.stream().filter(t -> t.tokenInfo().tokenId().equals(id)).findFirst().orElseThrow();
            long renewed = admin.renewDelegationToken(token.hmac(), new RenewDelegationTokenOptions().renewTimePeriodMs(60000))
                .expiryTimestamp().get(30, TimeUnit.SECONDS);
            long expired = admin.expireDelegationToken(token.hmac(), new ExpireDelegationTokenOptions().expiryTimePeriodMs(-1))
                .expiryTimestamp().get(30, TimeUnit.SECONDS);
            String after = produce(bootstrap, id, hmac, topic, "after expiry");
            String renewAgain;
            try {
                admin.renewDelegationToken(token.hmac()).expiryTimestamp().get(30, TimeUnit.SECONDS);
                renewAgain = "ok";
            } catch (ExecutionException e) {
                renewAgain = e.getCause().getClass().getSimpleName();
            }
            long now = System.currentTimeMillis();
            System.out.println("{\"owner\": \"" + token.tokenInfo().owner() + "\", \"renewers\": \""
                + token.tokenInfo().renewers() + "\", \"produced\": \"" + produced + "\", \"consumed\": \"" + consumed
                + "\", \"describedOwner\": \"" + mine.tokenInfo().owner() + "\", \"describedHmacMatches\": "
                + java.util.Arrays.equals(mine.hmac(), token.hmac()) + ", \"renewedWithinAMinute\": "
                + (renewed > now && renewed <= now + 60000) + ", \"expiredNow\": " + (Math.abs(expired - now) < 30000)
                + ", \"producedAfterExpiry\": \"" + after + "\", \"renewAfterExpiry\": \"" + renewAgain + "\"}");
        }
    }
}
