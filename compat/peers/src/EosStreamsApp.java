/*
 * The Kafka Streams application of tests/integration/test_peers_streams.py: exactly-once (v2) over a
 * repartition, a KTable join, a plain and a windowed aggregation, each with its state store and
 * changelog topic. Compiled by compat/setup-peers.sh against Kafka Streams 4.3 and 3.9 alike.
 *
 *   java -cp '.deps/peers-<v>/libs/*:.deps/peers-<v>/app' EosStreamsApp <bootstrap> <application.id> <state.dir> [key=value ...]
 *
 * Topics (created by the test): "<app>-in" (key: event id, value: "user,amount", all of a user's
 * events on one partition), "<app>-users" (key: user, value: region), and the outputs:
 *   <app>-enriched  key user, value "eventId,region,amount"  (the stream-table join, one per event)
 *   <app>-totals    key user, value "count,sum"              (the plain aggregation, one update per event)
 *   <app>-windowed  key "user@windowStart", value count      (10 s tumbling windows, one update per event)
 * The record cache is off, so every input event yields exactly one record on each output: the
 * expected output follows from the input alone, which is what the test computes in Python.
 * Prints "STATE <old> -> <new>" on each state change (the test waits for RUNNING).
 */
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.TimeWindows;

public class EosStreamsApp {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], app = args[1], stateDir = args[2];
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put("statestore.cache.max.bytes", "0");
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1");
        for (int i = 3; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            props.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }

        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> events = builder.stream(app + "-in", Consumed.with(Serdes.String(), Serdes.String()));
        KTable<String, String> users = builder.table(app + "-users", Consumed.with(Serdes.String(), Serdes.String()),
                Materialized.as("users-store"));
        // Re-keyed by user: the repartition topic <app>-by-user-repartition (as many partitions as the
        // users topic, so the join below is co-partitioned). Value: "eventId,amount".
        KStream<String, String> byUser = events
                .map((eventId, value) -> {
                    String[] parts = value.split(",");
                    return KeyValue.pair(parts[0], eventId + "," + parts[1]);
                })
                .repartition(Repartitioned.<String, String>as("by-user")
                        .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()));

        byUser.join(users, (event, region) -> {
                    String[] parts = event.split(",");
                    return parts[0] + "," + region + "," + parts[1];
                })
                .to(app + "-enriched", Produced.with(Serdes.String(), Serdes.String()));

        byUser.groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
                .aggregate(() -> "0,0", (user, event, total) -> {
                    String[] t = total.split(",");
                    long amount = Long.parseLong(event.split(",")[1]);
                    return (Long.parseLong(t[0]) + 1) + "," + (Long.parseLong(t[1]) + amount);
                }, Materialized.<String, String, org.apache.kafka.streams.state.KeyValueStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("totals-store")
                        .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()))
                .toStream()
                .to(app + "-totals", Produced.with(Serdes.String(), Serdes.String()));

        byUser.groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofDays(1)))
                .count(Materialized.as("windowed-store"))
                .toStream()
                .map((window, count) -> KeyValue.pair(window.key() + "@" + window.window().start(), Long.toString(count)))
                .to(app + "-windowed", Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch done = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            System.out.println("STATE " + before + " -> " + now);
            System.out.flush();
            if (now == KafkaStreams.State.NOT_RUNNING || now == KafkaStreams.State.ERROR) {
                done.countDown();
            }
        });
        // A stream thread that dies of an error (a broker restart can surface as one) is replaced, as
        // production applications configure it; exactly-once must hold across the replacement.
        streams.setUncaughtExceptionHandler(error -> {
            System.out.println("THREAD ERROR " + error);
            System.out.flush();
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(60));
            done.countDown();
        }));
        streams.start();
        done.await();
    }
}
