import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartitionInfo;

/**
 * Admin.createTopics with a manual replica assignment, then Admin.createPartitions with one, as
 * kafka-topics.sh --create/--alter --replica-assignment call them, then Admin.describeTopics.
 * Prints one JSON line: {"created": "ok" or the exception's class, "grown": ..., "message": the last
 * exception's message or null, "partitions": [[leader, [replicas...]], ...] or null}.
 * Usage: java -cp JARS:CLASSES ManualAssignments HOST:PORT TOPIC CREATE_ASSIGNMENT [GROW_ASSIGNMENT]
 * where an assignment is replica lists separated by ';', each broker ids separated by ',' ("1,2;2,3").
 */
public final class ManualAssignments {
    private static List<List<Integer>> parse(String spec) {
        List<List<Integer>> lists = new ArrayList<>();
        for (String part : spec.split(";")) {
            List<Integer> replicas = new ArrayList<>();
            for (String id : part.split(",")) {
                replicas.add(Integer.parseInt(id));
            }
            lists.add(replicas);
        }
        return lists;
    }

    private static List<Integer> ids(List<Node> nodes) {
        List<Integer> ids = new ArrayList<>();
        for (Node node : nodes) {
            ids.add(node.id());
        }
        return ids;
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        String topic = args[1];
        Map<Integer, List<Integer>> assignment = new LinkedHashMap<>();
        List<List<Integer>> lists = parse(args[2]);
        for (int i = 0; i < lists.size(); i++) {
            assignment.put(i, lists.get(i));
        }
        String message = null;
        try (Admin admin = Admin.create(props)) {
            String created = "ok";
            try {
                admin.createTopics(List.of(new NewTopic(topic, assignment))).all().get(30, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                created = e.getCause().getClass().getSimpleName();
                message = e.getCause().getMessage();
            }
            String grown = "none";
            if (args.length > 3 && created.equals("ok")) {
                List<List<Integer>> more = parse(args[3]);
                try {
                    admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(lists.size() + more.size(), more)))
                        .all().get(30, TimeUnit.SECONDS);
                    grown = "ok";
                } catch (ExecutionException e) {
                    grown = e.getCause().getClass().getSimpleName();
                    message = e.getCause().getMessage();
                }
            }
            String partitions = "null";
            if (created.equals("ok")) {
                long deadline = System.currentTimeMillis() + 30000;
                TopicDescription description;
                int expected = lists.size() + (grown.equals("ok") ? parse(args[3]).size() : 0);
                do {
                    description = admin.describeTopics(Set.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS).get(topic);
                } while (description.partitions().size() < expected && System.currentTimeMillis() < deadline);
                List<String> rows = new ArrayList<>();
                for (TopicPartitionInfo p : description.partitions()) {
                    int leader = p.leader() == null ? -1 : p.leader().id();
                    rows.add("[" + leader + ", " + ids(p.replicas()) + "]");
                }
                partitions = rows.toString();
            }
            String quoted = message == null ? "null" : "\"" + message.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
            System.out.println("{\"created\": \"" + created + "\", \"grown\": \"" + grown + "\", \"message\": "
                + quoted + ", \"partitions\": " + partitions + "}");
        }
    }
}
