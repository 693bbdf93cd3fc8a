import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartitionInfo;

/**
 * Admin.describeTopics as kafka-topics.sh --describe calls it: by name, with a small
 * partitionSizeLimitPerResponse so that the answer comes in pages (KIP-966's cursor).
 * Prints one line per topic: "NAME ok P0,P1,... leaders=L,L,... internal=false" or "NAME error ExceptionClass".
 * Usage: java -cp JARS:CLASSES DescribeTopicsCheck HOST:PORT LIMIT TOPIC...
 */
public final class DescribeTopicsCheck {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        int limit = Integer.parseInt(args[1]);
        List<String> topics = new ArrayList<>(List.of(args).subList(2, args.length));
        try (Admin admin = Admin.create(props)) {
            DescribeTopicsOptions options = new DescribeTopicsOptions().partitionSizeLimitPerResponse(limit);
            Map<String, KafkaFuture<TopicDescription>> answers = admin.describeTopics(topics, options).topicNameValues();
            for (Map.Entry<String, KafkaFuture<TopicDescription>> entry : new TreeMap<>(answers).entrySet()) {
                try {
                    TopicDescription description = entry.getValue().get(30, TimeUnit.SECONDS);
                    List<String> ids = new ArrayList<>();
                    List<String> leaders = new ArrayList<>();
                    for (TopicPartitionInfo info : description.partitions()) {
                        ids.add(Integer.toString(info.partition()));
                        leaders.add(info.leader() == null ? "none" : Integer.toString(info.leader().id()));
                    }
                    System.out.println(entry.getKey() + " ok " + String.join(",", ids) + " leaders="
                        + String.join(",", leaders) + " internal=" + description.isInternal());
                } catch (ExecutionException e) {
                    System.out.println(entry.getKey() + " error " + e.getCause().getClass().getSimpleName());
                    if (System.getenv("DESCRIBE_TOPICS_TRACE") != null) e.getCause().printStackTrace();
                }
            }
        }
    }
}
