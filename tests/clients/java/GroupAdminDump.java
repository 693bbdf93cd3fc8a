import java.util.*;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * Prints what Java's AdminClient says about consumer groups, one fact per line, so a test can
 * compare it with `kafka-wire groups`:
 *   GroupAdminDump BOOTSTRAP describe GROUP   -> GROUP/MEMBER/OFFSET lines
 *   GroupAdminDump BOOTSTRAP list             -> LISTED lines
 *   GroupAdminDump BOOTSTRAP delete GROUP     -> DELETED line
 * Uses listConsumerGroups, describeConsumerGroups, listConsumerGroupOffsets, deleteConsumerGroups.
 */
public class GroupAdminDump {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        try (Admin admin = Admin.create(props)) {
            switch (args[1]) {
                case "list":
                    for (ConsumerGroupListing g : admin.listConsumerGroups().all().get(20, TimeUnit.SECONDS)) {
                        System.out.println("LISTED " + g.groupId());
                    }
                    break;
                case "describe": {
                    String group = args[2];
                    ConsumerGroupDescription d = admin.describeConsumerGroups(Collections.singletonList(group))
                        .describedGroups().get(group).get(20, TimeUnit.SECONDS);
                    System.out.println("GROUP " + d.groupId() + " " + d.state() + " "
                        + (d.partitionAssignor().isEmpty() ? "-" : d.partitionAssignor()) + " " + d.members().size()
                        + " " + d.coordinator().id());
                    for (MemberDescription m : d.members()) {
                        System.out.println("MEMBER " + m.consumerId() + " " + m.host() + " " + m.clientId() + " "
                            + m.assignment().topicPartitions().size());
                    }
                    Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(group)
                        .partitionsToOffsetAndMetadata().get(20, TimeUnit.SECONDS);
                    for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
                        System.out.println("OFFSET " + e.getKey().topic() + " " + e.getKey().partition() + " "
                            + e.getValue().offset());
                    }
                    break;
                }
                case "delete":
                    admin.deleteConsumerGroups(Collections.singletonList(args[2])).all().get(20, TimeUnit.SECONDS);
                    System.out.println("DELETED " + args[2]);
                    break;
                default:
                    throw new IllegalArgumentException(args[1]);
            }
        }
    }
}
