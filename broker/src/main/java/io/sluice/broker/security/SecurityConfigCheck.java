package io.sluice.broker.security;

import io.sluice.broker.auth.Action;
import io.sluice.broker.config.BrokerConfig;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The security part of {@link BrokerConfig#validate()}: permissions, TLS files, limits and the
 * non-loopback rule. Adds every problem to the list; throws nothing.
 *
 * <p>Rule (safe by default): on a non-loopback listen address the broker refuses to start unless
 * users are configured, or {@code auth.allow-anonymous-remote} is true (then {@link ListenerExposure}
 * warns at every start). The same holds for the admin port ({@code metrics.listen-address}, when
 * {@code metrics.enabled}) with {@code metrics.allow-anonymous-remote}.
 */
public final class SecurityConfigCheck {
    private SecurityConfigCheck() {
    }

    public static void validate(BrokerConfig config, List<String> problems) {
        BrokerConfig.Auth auth = config.auth;
        for (int i = 0; i < auth.users.size(); i++) {
            checkPermissions(problems, "auth.users[" + i + "].permissions", auth.users.get(i).permissions);
        }
        checkPermissions(problems, "auth.anonymous-permissions", auth.anonymousPermissions);
        check(problems, "auth.backoff-after-failures", auth.backoffAfterFailures, 1, 1000);
        check(problems, "auth.backoff-initial-ms", auth.backoffInitialMs, 1, 3_600_000);
        check(problems, "auth.backoff-max-ms", auth.backoffMaxMs, Math.max(1, auth.backoffInitialMs), 24L * 3_600_000);
        check(problems, "auth.backoff-tracked-sources", auth.backoffTrackedSources, 1, 10_000_000);

        BrokerConfig.Tls tls = config.tls;
        String clientAuth = tls.clientAuth == null ? "none" : tls.clientAuth;
        if (!List.of("none", "optional", "require").contains(clientAuth)) {
            problems.add("tls.client-auth '" + clientAuth + "' is not one of none, optional, require");
        }
        if (tls.enabled) {
            checkFile(problems, "tls.certificate", tls.certificate);
            checkFile(problems, "tls.private-key", tls.privateKey);
            if (!clientAuth.equals("none")) {
                checkFile(problems, "tls.client-ca", tls.clientCa);
            }
        }

        BrokerConfig.Limits limits = config.limits;
        check(problems, "limits.max-connections", limits.maxConnections, 1, 10_000_000);
        check(problems, "limits.max-connections-per-user", limits.maxConnectionsPerUser, 1, 10_000_000);
        check(problems, "limits.max-queues", limits.maxQueues, 1, 10_000_000);
        check(problems, "limits.max-consumers-per-connection", limits.maxConsumersPerConnection, 1, 1_000_000);
        check(problems, "limits.max-unacked-per-connection", limits.maxUnackedPerConnection, 1, 1L << 40);

        if (config.broker.listenAddress != null && !config.broker.listenAddress.isBlank()
                && !ListenerExposure.isLoopback(config.broker.listenAddress)
                && auth.users.isEmpty() && !auth.allowAnonymousRemote) {
            problems.add("broker.listen-address " + config.broker.listenAddress + " is not a loopback address and auth.users is empty:"
                    + " anyone who can reach the port could use the broker. Configure auth.users (see `sluice hash-password`),"
                    + " or set auth.allow-anonymous-remote: true to accept anonymous remote clients knowingly");
        }
        BrokerConfig.Metrics metrics = config.metrics;
        if (metrics.enabled && metrics.listenAddress != null && !metrics.listenAddress.isBlank()
                && !ListenerExposure.isLoopback(metrics.listenAddress) && auth.users.isEmpty() && !metrics.allowAnonymousRemote) {
            problems.add("metrics.listen-address " + metrics.listenAddress + " is not a loopback address and auth.users is empty:"
                    + " anyone who can reach the admin API could declare, purge and delete queues. Configure auth.users,"
                    + " or set metrics.allow-anonymous-remote: true to accept anonymous remote admin requests knowingly");
        }
        if (metrics.scrapeAccess == null) {
            problems.add("metrics.scrape-access is empty (choose from open, authenticated)");
        }
    }

    private static void checkPermissions(List<String> problems, String key, List<BrokerConfig.Permission> permissions) {
        if (permissions == null) {
            return;
        }
        for (int j = 0; j < permissions.size(); j++) {
            BrokerConfig.Permission p = permissions.get(j);
            if (p.queues == null || p.queues.isEmpty()) {
                problems.add(key + "[" + j + "].queues is empty (use \"*\" for every queue)");
            }
            if (p.actions == null || p.actions.isEmpty()) {
                problems.add(key + "[" + j + "].actions is empty (choose from publish, consume, manage, monitor)");
                continue;
            }
            for (String a : p.actions) {
                try {
                    Action.parse(a);
                } catch (IllegalArgumentException e) {
                    problems.add(key + "[" + j + "].actions: " + e.getMessage());
                }
            }
        }
    }

    private static void checkFile(List<String> problems, String key, String file) {
        if (file == null || file.isBlank()) {
            problems.add(key + " is empty but tls.enabled is true");
        } else if (!Files.isReadable(Path.of(file))) {
            problems.add(key + " " + file + " is not a readable file");
        }
    }

    private static void check(List<String> problems, String key, long value, long min, long max) {
        if (value < min || value > max) {
            problems.add(key + " " + value + " is outside " + min + ".." + max);
        }
    }
}
