package io.sluice.broker;

import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.config.ConfigLoader;

import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.function.Function;

/**
 * The flags of {@code sluice} that run the broker, each with the configuration key it sets. One table
 * serves both the parser in {@link Main} and {@code --help}, so the help cannot list a flag the parser
 * does not take, and the defaults it prints are read from the embedded configuration, not retyped.
 */
final class BrokerFlags {
    /**
     * A flag that sets one configuration key.
     *
     * @param name         as typed, {@code --port}
     * @param valueName    the placeholder shown in help, {@code N}
     * @param key          the configuration key it overrides
     * @param description  what it is, for help
     * @param defaultValue reads the embedded default of {@code key}
     */
    record Flag(String name, String valueName, String key, String description, Function<BrokerConfig, Object> defaultValue) {
    }

    static final List<Flag> KEY_FLAGS = List.of(
            new Flag("--data-dir", "DIR", "broker.data-dir", "where the queues are stored", c -> c.broker.dataDir),
            new Flag("--listen", "ADDRESS", "broker.listen-address", "the client listener's address", c -> c.broker.listenAddress),
            new Flag("--port", "N", "broker.port", "the client port (0: any free port)", c -> c.broker.port),
            new Flag("--metrics-port", "N", "metrics.port", "the HTTP port of /metrics, /health and the admin API",
                    c -> c.metrics.port));

    /**
     * Environment variables that bin/sluice reads; the broker itself reads none. Kept in step with
     * bin/sluice by {@code MainTest}.
     */
    static final Map<String, String> ENVIRONMENT = Map.of(
            "SLUICE_JAVA_OPTS", "extra JVM options for bin/sluice, e.g. -Xmx2g (default: none)",
            "SLUICE_CLASS_ARCHIVE_DELAY", "seconds after a start without a class archive before bin/sluice makes one (default: 60)");

    private BrokerFlags() {
    }

    static Optional<Flag> find(String name) {
        return KEY_FLAGS.stream().filter(f -> f.name.equals(name)).findFirst();
    }

    /** The full help: every flag with its default, the other commands and the environment variables. */
    static String help() {
        BrokerConfig defaults = new ConfigLoader().load(null, Map.of());
        StringBuilder text = new StringBuilder();
        text.append("usage: sluice [FLAG ...]               run the broker (defaults: the embedded sluice.yaml)\n");
        text.append("flags (a flag's value may also follow an '=': --port=7672, --set=KEY=VALUE):\n");
        line(text, "--config FILE", "a YAML file layered over the embedded defaults (default: none)");
        for (Flag f : KEY_FLAGS) {
            line(text, f.name + " " + f.valueName, f.description + ", " + f.key + " (default: " + f.defaultValue.apply(defaults) + ")");
        }
        line(text, "--set KEY=VALUE", "any configuration key, repeatable, e.g. --set storage.durability=interval");
        line(text, "--check-config", "validate the configuration and the flags, then exit without starting anything");
        line(text, "--version", "print the version and exit");
        line(text, "-h, --help", "print this help and exit");
        text.append("commands:\n");
        line(text, "hash-password", "read a password (terminal or stdin) and print its hash for auth.users");
        line(text, "verify DATA_DIR", "check every segment and the ack state offline (exit 1 on damage)");
        line(text, "dump DATA_DIR QUEUE", "print a queue's messages and ack state [--limit N] [--from ID]");
        line(text, "admin COMMAND", "the admin API over HTTP; sluice admin --help lists its commands");
        line(text, "certs ca|node DIR ...", "make a cluster's TLS CA, or a node's certificate and key (sluice certs for usage)");
        line(text, "class-archive-training", "run a throwaway broker to record the classes a start loads (bin/sluice runs it)");
        text.append("environment:\n");
        ENVIRONMENT.forEach((name, meaning) -> line(text, name, meaning));
        text.append("exit status: 0 stopped cleanly (on SIGTERM too; 130 after Ctrl-C), 1 could not start or stop cleanly,"
                + " 2 bad arguments or configuration\n");
        return text.toString();
    }

    private static void line(StringBuilder text, String flag, String meaning) {
        text.append(String.format("  %-22s %s%n", flag, meaning));
    }

    /** This build's version, from the resource Maven filters at build time. */
    static String version() {
        Properties properties = new Properties();
        try (InputStream in = BrokerFlags.class.getResourceAsStream("/io/sluice/broker/version.properties")) {
            if (in != null) {
                properties.load(in);
            }
        } catch (IOException e) {
            return "unknown";
        }
        return properties.getProperty("version", "unknown");
    }
}
