import java.util.*;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.quota.*;

/**
 * Prints what Java's Admin client gets from the admin APIs a Kafka UI or kafka-configs.sh /
 * kafka-log-dirs.sh calls, one fact per line, for a test to check:
 *   AdminConfigsCheck BOOTSTRAP logdirs BROKER_ID          -> LOGDIR and REPLICA lines (describeLogDirs)
 *   AdminConfigsCheck BOOTSTRAP alter-quota ENTITY OPS     -> ALTERED or ERROR (alterClientQuotas);
 *       ENTITY is type=name[,type=name] with name <default> for the default entity; OPS key=value,
 *       value - removes the key
 *   AdminConfigsCheck BOOTSTRAP describe-quotas            -> QUOTA lines (describeClientQuotas, all)
 *   AdminConfigsCheck BOOTSTRAP alter-broker NAME OP KEY [VALUE] -> ALTERED or ERROR
 *       (incrementalAlterConfigs on ConfigResource(BROKER, NAME); OP is SET, DELETE, APPEND, SUBTRACT)
 *   AdminConfigsCheck BOOTSTRAP describe-broker NAME [KEY...] -> CONFIG lines (describeConfigs with
 *       synonyms): name, value, source, read-only, then the synonyms as name=value@source
 */
public class AdminConfigsCheck {
    static final long TIMEOUT = 30;

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        try (Admin admin = Admin.create(props)) {
            try {
                run(admin, args);
            } catch (ExecutionException e) {
                Throwable cause = e.getCause();
                System.out.println("ERROR " + cause.getClass().getSimpleName() + " " + cause.getMessage());
            }
        }
    }

    static String entityText(ClientQuotaEntity entity) {
        TreeMap<String, String> named = new TreeMap<>();
        for (Map.Entry<String, String> e : entity.entries().entrySet()) {
            named.put(e.getKey(), e.getValue() == null ? "<default>" : e.getValue());
        }
        return named.toString().replace(" ", "");
    }

    static void run(Admin admin, String[] args) throws Exception {
        switch (args[1]) {
            case "logdirs": {
                int broker = Integer.parseInt(args[2]);
                Map<String, LogDirDescription> dirs = admin.describeLogDirs(Collections.singletonList(broker))
                    .allDescriptions().get(TIMEOUT, TimeUnit.SECONDS).get(broker);
                for (Map.Entry<String, LogDirDescription> dir : dirs.entrySet()) {
                    LogDirDescription d = dir.getValue();
                    System.out.println("LOGDIR " + dir.getKey() + " "
                        + (d.error() == null ? "NONE" : d.error().getClass().getSimpleName()) + " "
                        + d.totalBytes().orElse(-1) + " " + d.usableBytes().orElse(-1));
                    for (Map.Entry<TopicPartition, ReplicaInfo> r : d.replicaInfos().entrySet()) {
                        System.out.println("REPLICA " + r.getKey().topic() + " " + r.getKey().partition() + " "
                            + r.getValue().size() + " " + r.getValue().offsetLag() + " " + r.getValue().isFuture());
                    }
                }
                break;
            }
            case "alter-quota": {
                Map<String, String> entries = new HashMap<>();
                for (String part : args[2].split(",")) {
                    String[] kv = part.split("=", 2);
                    entries.put(kv[0], kv[1].equals("<default>") ? null : kv[1]);
                }
                List<ClientQuotaAlteration.Op> ops = new ArrayList<>();
                for (int i = 3; i < args.length; i++) {
                    String[] kv = args[i].split("=", 2);
                    ops.add(new ClientQuotaAlteration.Op(kv[0], kv[1].equals("-") ? null : Double.valueOf(kv[1])));
                }
                admin.alterClientQuotas(Collections.singletonList(
                    new ClientQuotaAlteration(new ClientQuotaEntity(entries), ops))).all().get(TIMEOUT, TimeUnit.SECONDS);
                System.out.println("ALTERED");
                break;
            }
            case "describe-quotas": {
                Map<ClientQuotaEntity, Map<String, Double>> all = admin.describeClientQuotas(ClientQuotaFilter.all())
                    .entities().get(TIMEOUT, TimeUnit.SECONDS);
                List<String> lines = new ArrayList<>();
                for (Map.Entry<ClientQuotaEntity, Map<String, Double>> e : all.entrySet()) {
                    lines.add("QUOTA " + entityText(e.getKey()) + " " + new TreeMap<>(e.getValue()));
                }
                Collections.sort(lines);
                lines.forEach(System.out::println);
                break;
            }
            case "alter-broker": {
                ConfigResource resource = new ConfigResource(ConfigResource.Type.BROKER, args[2]);
                AlterConfigOp op = new AlterConfigOp(new ConfigEntry(args[4], args.length > 5 ? args[5] : null),
                    AlterConfigOp.OpType.valueOf(args[3]));
                admin.incrementalAlterConfigs(Collections.singletonMap(resource, Collections.singletonList(op)))
                    .all().get(TIMEOUT, TimeUnit.SECONDS);
                System.out.println("ALTERED");
                break;
            }
            case "describe-broker": {
                ConfigResource resource = new ConfigResource(ConfigResource.Type.BROKER, args[2]);
                Set<String> wanted = new HashSet<>(Arrays.asList(args).subList(3, args.length));
                Config config = admin.describeConfigs(Collections.singletonList(resource),
                    new DescribeConfigsOptions().includeSynonyms(true)).all().get(TIMEOUT, TimeUnit.SECONDS).get(resource);
                List<String> lines = new ArrayList<>();
                for (ConfigEntry e : config.entries()) {
                    if (!wanted.isEmpty() && !wanted.contains(e.name())) continue;
                    StringBuilder line = new StringBuilder("CONFIG " + e.name() + " " + e.value() + " " + e.source()
                        + " " + (e.isReadOnly() ? "read-only" : "dynamic"));
                    for (ConfigEntry.ConfigSynonym s : e.synonyms()) {
                        line.append(" ").append(s.name()).append("=").append(s.value()).append("@").append(s.source());
                    }
                    lines.add(line.toString());
                }
                Collections.sort(lines);
                lines.forEach(System.out::println);
                break;
            }
            default:
                throw new IllegalArgumentException(args[1]);
        }
    }
}
