import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeReplicaLogDirsResult.ReplicaLogDirInfo;
import org.apache.kafka.common.TopicPartitionReplica;

/**
 * Admin.alterReplicaLogDirs for one replica, then Admin.describeReplicaLogDirs until no future
 * replica is left (at most 30 s), as kafka-reassign-partitions.sh does with log dirs in its
 * reassignment JSON. Prints one JSON line: {"altered": "ok" or the exception's class,
 * "current": the replica's log dir, "future": its future replica's log dir or null}.
 * Usage: java -cp JARS:CLASSES ReplicaLogDirs HOST:PORT TOPIC PARTITION BROKER_ID LOG_DIR
 */
public final class ReplicaLogDirs {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        TopicPartitionReplica replica =
            new TopicPartitionReplica(args[1], Integer.parseInt(args[2]), Integer.parseInt(args[3]));
        try (Admin admin = Admin.create(props)) {
            String altered = "ok";
            try {
                admin.alterReplicaLogDirs(Map.of(replica, args[4])).all().get(30, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                altered = e.getCause().getClass().getSimpleName();
            }
            ReplicaLogDirInfo info;
            long deadline = System.currentTimeMillis() + 30000;
            do {
                info = admin.describeReplicaLogDirs(List.of(replica)).all().get(30, TimeUnit.SECONDS).get(replica);
                if (info.getFutureReplicaLogDir() == null) {
                    break;
                }
                Thread.sleep(100);
            } while (System.currentTimeMillis() < deadline);
            String future = info.getFutureReplicaLogDir() == null ? "null" : "\"" + info.getFutureReplicaLogDir() + "\"";
            System.out.println("{\"altered\": \"" + altered + "\", \"current\": \"" + info.getCurrentReplicaLogDir()
                + "\", \"future\": " + future + "}");
        }
    }
}
