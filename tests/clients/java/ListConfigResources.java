import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ClientMetricsResourceListing;
import org.apache.kafka.clients.admin.ListConfigResourcesOptions;
import org.apache.kafka.common.config.ConfigResource;

/**
 * Admin.listConfigResources (KIP-1142) for each argument after the bootstrap (comma-separated
 * ConfigResource.Type names, or "all" for none given), and the deprecated listClientMetricsResources.
 * Prints one JSON line per call: {"types": ARG, "resources": [[TYPE, NAME], ...] sorted} or
 * {"types": ARG, "error": the exception's class}; the last line is {"clientMetrics": [...]}.
 * Usage: java -cp JARS:CLASSES ListConfigResources HOST:PORT TYPES...
 */
public final class ListConfigResources {
    private static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    @SuppressWarnings("deprecation")
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        try (Admin admin = Admin.create(props)) {
            for (int i = 1; i < args.length; i++) {
                Set<ConfigResource.Type> types = new HashSet<>();
                if (!args[i].equals("all")) {
                    for (String name : args[i].split(",")) {
                        types.add(ConfigResource.Type.valueOf(name));
                    }
                }
                try {
                    Collection<ConfigResource> listed =
                        admin.listConfigResources(types, new ListConfigResourcesOptions()).all().get(30, TimeUnit.SECONDS);
                    List<String> rows = new ArrayList<>();
                    for (ConfigResource resource : listed) {
                        rows.add("[" + quote(resource.type().name()) + ", " + quote(resource.name()) + "]");
                    }
                    rows.sort(null);
                    System.out.println("{\"types\": " + quote(args[i]) + ", \"resources\": " + rows + "}");
                } catch (ExecutionException e) {
                    System.out.println("{\"types\": " + quote(args[i]) + ", \"error\": "
                        + quote(e.getCause().getClass().getSimpleName()) + "}");
                }
            }
            List<String> names = new ArrayList<>();
            for (ClientMetricsResourceListing listing : admin.listClientMetricsResources().all().get(30, TimeUnit.SECONDS)) {
                names.add(quote(listing.name()));
            }
            System.out.println("{\"clientMetrics\": " + names + "}");
        }
    }
}
