import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.common.TopicPartition;

/**
 * Admin.alterPartitionReassignments then Admin.listPartitionReassignments for one partition, as
 * kafka-reassign-partitions.sh --execute (or --cancel) and --list call them.
 * Prints one JSON line: {"altered": "ok" or the exception's class, "ongoing": null or
 * {"replicas": [...], "adding": [...], "removing": [...]}}.
 * Usage: java -cp JARS:CLASSES ReassignPartitions HOST:PORT TOPIC PARTITION (B1,B2,...|cancel)
 */
public final class ReassignPartitions {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        TopicPartition partition = new TopicPartition(args[1], Integer.parseInt(args[2]));
        Optional<NewPartitionReassignment> target = Optional.empty();
        if (!args[3].equals("cancel")) {
            List<Integer> replicas = new ArrayList<>();
            for (String id : args[3].split(",")) {
                replicas.add(Integer.parseInt(id));
            }
            target = Optional.of(new NewPartitionReassignment(replicas));
        }
        try (Admin admin = Admin.create(props)) {
            String altered = "ok";
            try {
                admin.alterPartitionReassignments(Map.of(partition, target)).all().get(30, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                altered = e.getCause().getClass().getSimpleName();
            }
            Map<TopicPartition, PartitionReassignment> ongoing =
                admin.listPartitionReassignments(Set.of(partition)).reassignments().get(30, TimeUnit.SECONDS);
            PartitionReassignment listed = ongoing.get(partition);
            String described = listed == null ? "null"
                : "{\"replicas\": " + listed.replicas() + ", \"adding\": " + listed.addingReplicas()
                    + ", \"removing\": " + listed.removingReplicas() + "}";
            System.out.println("{\"altered\": \"" + altered + "\", \"ongoing\": " + described + "}");
        }
    }
}
