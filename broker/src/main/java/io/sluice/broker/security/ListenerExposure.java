package io.sluice.broker.security;

import io.sluice.broker.config.BrokerConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.InetAddress;
import java.net.UnknownHostException;

/**
 * Whether the listener is reachable from other hosts, and what that means for anonymous clients.
 * On loopback, {@code auth.allow-anonymous} alone decides. On any other address (the wildcard
 * included), anonymous clients also need {@code auth.allow-anonymous-remote: true}, which is logged
 * as a WARN at every start; without users and without it the configuration is refused
 * ({@link SecurityConfigCheck}).
 */
public final class ListenerExposure {
    private static final Logger LOG = LoggerFactory.getLogger(ListenerExposure.class);

    private ListenerExposure() {
    }

    public static boolean isLoopback(String address) {
        try {
            return InetAddress.getByName(address).isLoopbackAddress();
        } catch (UnknownHostException e) {
            return false;
        }
    }

    /**
     * Logs the WARN of an admin port open to anonymous requests from other hosts (non-loopback, no
     * users, {@code metrics.allow-anonymous-remote: true}); the configuration check refuses it otherwise.
     */
    public static void warnIfAdminExposed(BrokerConfig config) {
        BrokerConfig.Metrics metrics = config.metrics;
        if (!isLoopback(metrics.listenAddress) && config.auth.users.isEmpty() && config.auth.allowAnonymous) {
            LOG.warn("SECURITY: the admin API listens on non-loopback address {} for anonymous requests"
                    + " (metrics.allow-anonymous-remote: true); anyone who can reach port {} can declare, purge and delete queues"
                    + " within auth.anonymous-permissions. Configure auth.users and set metrics.allow-anonymous-remote: false to close this.",
                    metrics.listenAddress, metrics.port);
        }
    }

    /** Whether connections without a user are let in; logs the WARN of an anonymous remote listener. */
    public static boolean anonymousAllowed(BrokerConfig config) {
        if (!config.auth.allowAnonymous) {
            return false;
        }
        if (isLoopback(config.broker.listenAddress)) {
            return true;
        }
        if (config.auth.allowAnonymousRemote) {
            LOG.warn("SECURITY: listening on non-loopback address {} with anonymous access (auth.allow-anonymous-remote: true);"
                    + " anyone who can reach port {} can publish, consume and manage queues within auth.anonymous-permissions."
                    + " Configure auth.users and set auth.allow-anonymous-remote: false to close this.",
                    config.broker.listenAddress, config.broker.port);
            return true;
        }
        LOG.info("Anonymous access is off: the listener {} is not loopback and auth.allow-anonymous-remote is false.",
                config.broker.listenAddress);
        return false;
    }
}
