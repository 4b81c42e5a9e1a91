package io.sluice.broker.config;

import com.fasterxml.jackson.annotation.JsonProperty;
import io.sluice.broker.auth.PasswordHasher;
import io.sluice.broker.log.Printable;
import io.sluice.storage.DurabilityMode;
import io.sluice.storage.QueueNames;
import io.sluice.storage.StoreConfig;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The broker's settings, as read from {@code config/sluice.yaml} (embedded), an optional file and
 * command-line overrides. Mutable only while {@link ConfigLoader} fills it; {@link #validate()} checks
 * every field and reports all problems at once.
 */
public final class BrokerConfig {
    /** The most a wire string holds (docs/protocol.md), and so the longest broker.name a HELLO_OK can carry. */
    public static final int MAX_BROKER_NAME_BYTES = 0xFFFF;

    public Broker broker = new Broker();
    public Auth auth = new Auth();
    public Storage storage = new Storage();
    public Queues queues = new Queues();
    public Tls tls = new Tls();
    public Limits limits = new Limits();
    public Metrics metrics = new Metrics();
    public Transactions transactions = new Transactions();
    public Cluster cluster = new Cluster();

    /**
     * The bounds of a queue's ack timeout and delivery limit: of {@code queues.ack-timeout-ms} and
     * {@code queues.max-deliveries} here, and of a DECLARE's (or the admin API's) {@code ackTimeoutMs} and
     * {@code maxDeliveries} ({@code QueueOptions}), so that no queue gets a value the configuration refuses.
     */
    public static final long MIN_ACK_TIMEOUT_MS = 100;
    public static final long MAX_ACK_TIMEOUT_MS = 7L * 24 * 3_600_000;
    public static final long MIN_MAX_DELIVERIES = 1;
    public static final long MAX_MAX_DELIVERIES = 1_000_000;

    /** The longest {@code queues.dead-letter-suffix}: a cut dead-letter queue name keeps at least 127 of its queue's characters. */
    public static final int MAX_DEAD_LETTER_SUFFIX = 64;

    /**
     * Replication on Apache Ratis (docs/replication.md): off by default, when the broker is a single node
     * exactly as before. On, this broker is node {@code node-id} of the cluster {@code nodes} lists.
     */
    public static final class Cluster {
        public boolean enabled;
        /** This broker's entry in {@link #nodes}. */
        @JsonProperty("node-id")
        public int nodeId;
        /**
         * The nodes of the cluster's first start, this one included. Once the cluster runs, its members are those of
         * the Raft configuration in the log (docs/replication.md, "Adding and removing a node"); this list then only
         * fills in addresses the log lacks.
         */
        public List<Node> nodes = new ArrayList<>();
        /**
         * This node joins a running cluster: it starts with no membership, starts no election, and waits for the
         * leader to add it ({@code POST /api/cluster/nodes}); {@link #nodes} names it and the current members.
         */
        public boolean join;
        /**
         * A follower that hears nothing from a leader for a random time in [min, max] starts an election.
         * Ratis's own 150–300 ms elected spuriously on a loaded two-core machine (issue 20), hence 1–2 s.
         */
        @JsonProperty("election-timeout-min-ms")
        public long electionTimeoutMinMs;
        @JsonProperty("election-timeout-max-ms")
        public long electionTimeoutMaxMs;
        /**
         * Log entries between two snapshots (docs/replication.md, rule R4): a restart replays at most about this
         * many entries; each snapshot waits for every queue's store to be durable and copies what is not sealed.
         */
        @JsonProperty("snapshot-every-entries")
        public long snapshotEveryEntries;
        /**
         * Per queue, the headers and payload the leader submitted to the log and has not applied yet at which its
         * producers are told BLOCKED (docs/replication.md, rule R9): a slow majority slows producers instead of
         * growing the leader's memory.
         */
        @JsonProperty("max-uncommitted-bytes")
        public long maxUncommittedBytes;
        /**
         * Size of a Raft log segment file. The log is purged a whole closed segment at a time, so this is the
         * granularity of the purge after a snapshot (docs/replication.md, rule R4); raised to hold two of the
         * largest entries.
         */
        @JsonProperty("log-segment-bytes")
        public long logSegmentBytes;
        /**
         * A follower fetching the leader's snapshot (docs/replication.md, rule R4) gives up when the leader sends
         * nothing for this long (a partition in the middle of a transfer) and fetches again at the next notification.
         */
        @JsonProperty("snapshot-read-timeout-ms")
        public long snapshotReadTimeoutMs;
        /** A follower gives up connecting to the leader's snapshot port after this long. */
        @JsonProperty("snapshot-connect-timeout-ms")
        public long snapshotConnectTimeoutMs;
        /**
         * Who may fetch a snapshot from a node's snapshot-port (docs/security.md, "The snapshot port"): {@code secret},
         * a node that proves it holds the secret of {@link #secretFile}; or {@code none}, anyone who reaches the port
         * (logged as a SECURITY warning at every start).
         */
        @JsonProperty("snapshot-auth")
        public String snapshotAuth;
        /** The file holding the cluster's shared secret, the same on every node, readable by the broker's user alone. */
        @JsonProperty("secret-file")
        public String secretFile;
        /** The Raft log and its metadata; empty means {@code <broker.data-dir>/raft}. */
        @JsonProperty("raft-dir")
        public String raftDir;
        /** Mutual TLS between the nodes, on the Raft and snapshot ports (docs/security.md, "Between the nodes"). */
        public ClusterTls tls = new ClusterTls();
    }

    /**
     * TLS between a cluster's nodes: each node presents its certificate, signed by the cluster's CA, and accepts
     * only peers whose certificate that CA signed; a client checks that the certificate names the host it dialled.
     */
    public static final class ClusterTls {
        public boolean enabled;
        /** PEM certificate chain of this node; it must name the node's {@code host} (a DNS or IP subject alternative name). */
        public String certificate;
        /** PEM PKCS#8 private key of this node, unencrypted. */
        @JsonProperty("private-key")
        public String privateKey;
        /** PEM of the CA (or CAs) that sign the nodes' certificates: a peer must present a certificate it signed. */
        public String ca;
    }

    /** One node of a cluster: its id, the host others reach it on, its Raft port and its client port. */
    public static final class Node {
        public int id;
        public String host;
        @JsonProperty("raft-port")
        public int raftPort;
        @JsonProperty("client-port")
        public int clientPort;
        /**
         * Where this node serves its latest snapshot to a follower that fell behind the purged log
         * (docs/replication.md, rule R4); 0: it serves none, and while any node has none the log is purged only
         * below every node's commit index.
         */
        @JsonProperty("snapshot-port")
        public int snapshotPort;

        public Node() {
        }

        public Node(int id, String host, int raftPort, int clientPort) {
            this.id = id;
            this.host = host;
            this.raftPort = raftPort;
            this.clientPort = clientPort;
        }
    }

    /** Local transactions (docs/transactions.md): their timeout and bounds. */
    public static final class Transactions {
        /** A transaction open longer than this (or than the timeout its TX_BEGIN asked for, up to this) is rolled back. */
        @JsonProperty("timeout-ms")
        public long timeoutMs;
        /** Messages published plus messages acknowledged, per transaction. */
        @JsonProperty("max-messages")
        public int maxMessages;
        /** Headers plus payload of the messages a transaction publishes. */
        @JsonProperty("max-bytes")
        public long maxBytes;
        @JsonProperty("max-open-per-connection")
        public int maxOpenPerConnection;
    }

    /** The HTTP endpoint for Prometheus, the health checks and the admin API. */
    public static final class Metrics {
        public boolean enabled;
        @JsonProperty("listen-address")
        public String listenAddress;
        public int port;
        /** Serve HTTPS with the listener's certificate ({@code tls.certificate}, {@code tls.private-key}). */
        public boolean tls;
        /** On a non-loopback address with no users, start anyway (and warn): see {@code SecurityConfigCheck}. */
        @JsonProperty("allow-anonymous-remote")
        public boolean allowAnonymousRemote;
        /** Who may read {@code /metrics}. */
        @JsonProperty("scrape-access")
        public ScrapeAccess scrapeAccess;
    }

    /** Listener, data directory and connection-level settings. */
    public static final class Broker {
        public String name;
        @JsonProperty("listen-address")
        public String listenAddress;
        public int port;
        @JsonProperty("data-dir")
        public String dataDir;
        @JsonProperty("max-frame-bytes")
        public int maxFrameBytes;
        @JsonProperty("heartbeat-interval-ms")
        public int heartbeatIntervalMs;
        @JsonProperty("handshake-timeout-ms")
        public int handshakeTimeoutMs;
        @JsonProperty("shutdown-timeout-ms")
        public int shutdownTimeoutMs;
        @JsonProperty("publish-window-messages")
        public int publishWindowMessages;
        @JsonProperty("publish-window-bytes")
        public long publishWindowBytes;
        /** Event-loop threads for connections and queues; 0 means one per available processor. */
        @JsonProperty("io-threads")
        public int ioThreads;
    }

    /** Who may connect. */
    public static final class Auth {
        @JsonProperty("allow-anonymous")
        public boolean allowAnonymous;
        /** Anonymous access on a non-loopback listener needs this too (see docs/security.md). */
        @JsonProperty("allow-anonymous-remote")
        public boolean allowAnonymousRemote;
        /** What anonymous connections may do; null (the default) means every action on every queue. */
        @JsonProperty("anonymous-permissions")
        public List<Permission> anonymousPermissions;
        public List<User> users = new ArrayList<>();
        /** Refused attempts in a row from one address before it is in backoff (see {@code LoginBackoff}). */
        @JsonProperty("backoff-after-failures")
        public int backoffAfterFailures;
        @JsonProperty("backoff-initial-ms")
        public long backoffInitialMs;
        @JsonProperty("backoff-max-ms")
        public long backoffMaxMs;
        /** Addresses the backoff table remembers at most. */
        @JsonProperty("backoff-tracked-sources")
        public int backoffTrackedSources;
    }

    /**
     * A user allowed to connect; the password is stored only as a salted PBKDF2 hash. A user without a
     * password hash can connect only with a TLS client certificate whose subject CN is its name.
     */
    public static final class User {
        public String name;
        @JsonProperty("password-hash")
        public String passwordHash;
        /** What the user may do; null or empty means nothing. */
        public List<Permission> permissions = new ArrayList<>();
    }

    /** A grant: the actions (publish, consume, manage, monitor) on the queues whose names match a glob ({@code *}). */
    public static final class Permission {
        public String queues;
        public List<String> actions = new ArrayList<>();

        public Permission() {
        }

        public Permission(String queues, List<String> actions) {
            this.queues = queues;
            this.actions = actions;
        }
    }

    /** TLS on the client listener (JDK provider, TLSv1.3 and TLSv1.2). */
    public static final class Tls {
        public boolean enabled;
        /** PEM certificate chain of the broker. */
        public String certificate;
        /** PEM PKCS#8 private key of the broker, unencrypted. */
        @JsonProperty("private-key")
        public String privateKey;
        /** none | optional | require: whether clients present a certificate. */
        @JsonProperty("client-auth")
        public String clientAuth;
        /** PEM bundle of the CAs that sign client certificates; needed unless client-auth is none. */
        @JsonProperty("client-ca")
        public String clientCa;
    }

    /** Limits against hostile or broken clients; each refusal is an ERROR RESOURCE_LIMIT and is counted. */
    public static final class Limits {
        @JsonProperty("max-connections")
        public int maxConnections;
        @JsonProperty("max-connections-per-user")
        public int maxConnectionsPerUser;
        @JsonProperty("max-queues")
        public int maxQueues;
        @JsonProperty("max-consumers-per-connection")
        public int maxConsumersPerConnection;
        @JsonProperty("max-unacked-per-connection")
        public long maxUnackedPerConnection;
    }

    /** Maps to {@link StoreConfig}. */
    public static final class Storage {
        public String durability;
        @JsonProperty("sync-interval-ms")
        public long syncIntervalMs;
        @JsonProperty("segment-bytes")
        public long segmentBytes;
        @JsonProperty("max-message-bytes")
        public int maxMessageBytes;
        @JsonProperty("reserved-disk-bytes")
        public long reservedDiskBytes;
        @JsonProperty("ack-journal-bytes")
        public int ackJournalBytes;
        @JsonProperty("relocate-max-live-ratio")
        public double relocateMaxLiveRatio;
        @JsonProperty("relocate-max-live-messages")
        public int relocateMaxLiveMessages;
        @JsonProperty("relocate-after-ms")
        public long relocateAfterMs;
        @JsonProperty("read-ahead-messages")
        public int readAheadMessages;
    }

    /** Defaults for every queue. */
    public static final class Queues {
        @JsonProperty("max-deliveries")
        public int maxDeliveries;
        @JsonProperty("ack-timeout-ms")
        public long ackTimeoutMs;
        @JsonProperty("redelivery-delay-ms")
        public long redeliveryDelayMs;
        @JsonProperty("max-redelivery-delay-ms")
        public long maxRedeliveryDelayMs;
        @JsonProperty("dead-letter-suffix")
        public String deadLetterSuffix;
        @JsonProperty("quota-soft-messages")
        public long quotaSoftMessages;
        @JsonProperty("quota-hard-messages")
        public long quotaHardMessages;
        @JsonProperty("quota-soft-bytes")
        public long quotaSoftBytes;
        @JsonProperty("quota-hard-bytes")
        public long quotaHardBytes;
        @JsonProperty("overflow-policy")
        public String overflowPolicy;
        @JsonProperty("dead-letter-dropped")
        public boolean deadLetterDropped;
        /** Idempotent publishing: per queue, a producer table (see {@code ProducerRegistry}). */
        @JsonProperty("dedup-enabled")
        public boolean dedupEnabled;
        @JsonProperty("dedup-max-producers")
        public int dedupMaxProducers;
        @JsonProperty("dedup-idle-expiry-ms")
        public long dedupIdleExpiryMs;
    }

    public Path dataDirectory() {
        return Path.of(broker.dataDir);
    }

    /** Where this node keeps its Raft log: {@code cluster.raft-dir}, or {@code raft} in the data directory. */
    public Path raftDirectory() {
        return cluster.raftDir == null || cluster.raftDir.isBlank() ? dataDirectory().resolve("raft") : Path.of(cluster.raftDir);
    }

    /** The storage settings, validated by {@link StoreConfig.Builder#build()}; on a cluster node without relocation. */
    public StoreConfig storeConfig() {
        return StoreConfig.builder()
                .durability(DurabilityMode.parse(storage.durability))
                .syncIntervalMs(storage.syncIntervalMs)
                .segmentBytes(storage.segmentBytes)
                .maxMessageBytes(storage.maxMessageBytes)
                .reservedDiskBytes(storage.reservedDiskBytes)
                .ackJournalBytes(storage.ackJournalBytes)
                .relocateMaxLiveRatio(storage.relocateMaxLiveRatio)
                // A cluster node never relocates: a relocated copy takes a new slot in the segment being written, at a
                // moment of this node's choosing, and every message appended after it would get an id the other
                // nodes do not give it; replicated acks name ids (docs/replication.md, rule R2).
                .relocateMaxLiveMessages(cluster.enabled ? 0 : storage.relocateMaxLiveMessages)
                .relocateAfterMs(storage.relocateAfterMs)
                .readAheadMessages(storage.readAheadMessages)
                // Only a cluster needs a segment sealed at the same record after a restart (docs/storage.md); a broker of
                // its own skips the pass over its write segment at open.
                .exactRollPoint(cluster.enabled)
                .build();
    }

    /** Checks every field; throws {@link ConfigException} listing each bad key, its value and why. */
    public BrokerConfig validate() {
        List<String> problems = new ArrayList<>();
        if (broker.name == null || broker.name.isBlank()) {
            problems.add("broker.name is empty");
        } else {
            checkBrokerName(problems, broker.name);
        }
        if (broker.listenAddress == null || broker.listenAddress.isBlank()) {
            problems.add("broker.listen-address is empty");
        }
        checkRange(problems, "broker.port", broker.port, 0, 65535);
        if (broker.dataDir == null || broker.dataDir.isBlank()) {
            problems.add("broker.data-dir is empty");
        }
        checkRange(problems, "broker.max-frame-bytes", broker.maxFrameBytes, 1024, 256L << 20);
        checkRange(problems, "broker.heartbeat-interval-ms", broker.heartbeatIntervalMs, 0, 3_600_000);
        checkRange(problems, "broker.handshake-timeout-ms", broker.handshakeTimeoutMs, 100, 600_000);
        checkRange(problems, "broker.shutdown-timeout-ms", broker.shutdownTimeoutMs, 100, 600_000);
        checkRange(problems, "broker.publish-window-messages", broker.publishWindowMessages, 1, 10_000_000);
        checkRange(problems, "broker.publish-window-bytes", broker.publishWindowBytes, 1024, 1L << 40);
        checkRange(problems, "broker.io-threads", broker.ioThreads, 0, 1024);
        Map<String, Integer> userIndexes = new HashMap<>();
        for (int i = 0; i < auth.users.size(); i++) {
            User u = auth.users.get(i);
            if (u.name == null || u.name.isBlank()) {
                problems.add("auth.users[" + i + "].name is empty");
            } else {
                checkUserName(problems, i, u.name, userIndexes.putIfAbsent(u.name, i));
            }
            String hashProblem = u.passwordHash == null ? null : PasswordHasher.problem(u.passwordHash);
            if (hashProblem != null) {
                // The hash is not quoted: it is a secret's digest, and the problem says which part is wrong.
                problems.add("auth.users[" + i + "].password-hash of user '" + u.name + "' " + hashProblem
                        + " (the form is pbkdf2-sha256:<iterations>:<salt base64>:<hash base64>; print one with `sluice hash-password`)");
            }
        }
        io.sluice.broker.security.SecurityConfigCheck.validate(this, problems);
        try {
            DurabilityMode.parse(storage.durability);
            try {
                storeConfig();
            } catch (IllegalArgumentException e) {
                problems.addAll(StorageKeys.problems(e.getMessage()));
            }
        } catch (IllegalArgumentException e) {
            problems.add("storage.durability '" + storage.durability + "' is not one of always, interval, never");
        }
        if (metrics.tls && (tls.certificate == null || tls.certificate.isBlank() || tls.privateKey == null || tls.privateKey.isBlank())) {
            problems.add("metrics.tls is true but tls.certificate and tls.private-key are not both set");
        }
        if (storage.maxMessageBytes > broker.maxFrameBytes - 1024) {
            problems.add("storage.max-message-bytes " + storage.maxMessageBytes + " must be at least 1024 below broker.max-frame-bytes "
                    + broker.maxFrameBytes + ", or a message could not be delivered in one frame");
        }
        checkRange(problems, "queues.max-deliveries", queues.maxDeliveries, MIN_MAX_DELIVERIES, MAX_MAX_DELIVERIES);
        checkRange(problems, "transactions.timeout-ms", transactions.timeoutMs, 100, 24L * 3_600_000);
        checkRange(problems, "transactions.max-messages", transactions.maxMessages, 1, 100_000);
        checkRange(problems, "transactions.max-bytes", transactions.maxBytes, 1, 1L << 30);
        checkRange(problems, "transactions.max-open-per-connection", transactions.maxOpenPerConnection, 1, 10_000);
        checkRange(problems, "queues.dedup-max-producers", queues.dedupMaxProducers, 1, 10_000_000);
        checkRange(problems, "queues.dedup-idle-expiry-ms", queues.dedupIdleExpiryMs, 1000, 30L * 24 * 3_600_000);
        checkRange(problems, "queues.ack-timeout-ms", queues.ackTimeoutMs, MIN_ACK_TIMEOUT_MS, MAX_ACK_TIMEOUT_MS);
        checkRange(problems, "queues.redelivery-delay-ms", queues.redeliveryDelayMs, 0, 3_600_000);
        checkRange(problems, "queues.max-redelivery-delay-ms", queues.maxRedeliveryDelayMs, queues.redeliveryDelayMs, 24L * 3_600_000);
        if (queues.deadLetterSuffix == null || queues.deadLetterSuffix.isEmpty()) {
            problems.add("queues.dead-letter-suffix is empty");
        } else {
            checkDeadLetterSuffix(problems, queues.deadLetterSuffix);
        }
        try {
            io.sluice.broker.flow.QuotaSettings.OverflowPolicy overflow = io.sluice.broker.flow.QuotaSettings.OverflowPolicy
                    .parse(String.valueOf(queues.overflowPolicy), "queues.overflow-policy");
            new io.sluice.broker.flow.QuotaSettings(queues.quotaSoftMessages, queues.quotaHardMessages, queues.quotaSoftBytes,
                    queues.quotaHardBytes, overflow);
        } catch (IllegalArgumentException e) {
            problems.add(e.getMessage()); // names the queues.quota-* keys
        }
        if (metrics.listenAddress == null || metrics.listenAddress.isBlank()) {
            problems.add("metrics.listen-address is empty");
        }
        checkRange(problems, "metrics.port", metrics.port, 0, 65535);
        if (metrics.enabled && metrics.port != 0 && metrics.port == broker.port) {
            problems.add("metrics.port " + metrics.port + " is the same as broker.port; give each its own port");
        }
        ClusterConfigCheck.validate(this, problems);
        if (!problems.isEmpty()) {
            throw new ConfigException(problems);
        }
        return this;
    }

    /** Every HELLO_OK carries the name, as a wire string (at most 65,535 bytes of UTF-8), and clients print it. */
    private static void checkBrokerName(List<String> problems, String name) {
        int bytes = name.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > MAX_BROKER_NAME_BYTES) {
            problems.add("broker.name is " + bytes + " bytes of UTF-8, more than the " + MAX_BROKER_NAME_BYTES
                    + " a HELLO_OK carries; choose a shorter name");
        }
        checkPrintable(problems, "broker.name", name, "a broker's name");
    }

    /**
     * A user once, and a name the admin API's HTTP Basic credentials can carry: no ':' (user:password is split at the first
     * one) and no control character (which would also be written as it is into the log of a failed login).
     */
    private static void checkUserName(List<String> problems, int index, String name, Integer earlier) {
        String key = "auth.users[" + index + "].name";
        if (earlier != null) {
            problems.add(key + " '" + name + "' is given twice (also auth.users[" + earlier + "]); give each user once, with all"
                    + " its permissions");
        }
        if (checkPrintable(problems, key, name, "a user name") && name.indexOf(':') >= 0) {
            problems.add(key + " '" + name + "' holds a ':', which HTTP Basic credentials cannot carry (the admin API reads"
                    + " user:password); choose a name without one");
        }
    }

    /** Adds a problem if {@code value} of {@code key} holds a control character; returns whether it holds none. */
    private static boolean checkPrintable(List<String> problems, String key, String value, String what) {
        int control = Printable.firstControl(value);
        if (control >= 0) {
            problems.add(key + " holds a control character (U+" + String.format("%04X", control) + "); " + what + " is printable"
                    + " text");
        }
        return control < 0;
    }

    /**
     * A suffix makes a queue's default dead-letter queue's name, so it may hold only what a queue name may (a slash
     * would name a directory elsewhere, a space no queue at all: every move would fail and the message be delivered
     * again, forever), and it is short enough to leave a name's beginning in a cut name
     * ({@code QueueOptions.defaultDeadLetterQueue}).
     */
    private static void checkDeadLetterSuffix(List<String> problems, String suffix) {
        if (suffix.length() > MAX_DEAD_LETTER_SUFFIX) {
            problems.add("queues.dead-letter-suffix has " + suffix.length() + " characters; at most " + MAX_DEAD_LETTER_SUFFIX);
            return;
        }
        for (int i = 0; i < suffix.length(); i++) {
            char c = suffix.charAt(i);
            if (!QueueNames.isValid("a" + c)) {
                problems.add("queues.dead-letter-suffix '" + suffix + "' has character '" + c + "' at position " + i
                        + "; a queue name, which it ends, allows A-Z a-z 0-9 . _ -");
                return;
            }
        }
    }

    /** Adds "key value is outside min..max" to {@code problems} for a number past its bounds. */
    public static void checkRange(List<String> problems, String key, long value, long min, long max) {
        if (value < min || value > max) {
            problems.add(key + " " + value + " is outside " + min + ".." + max);
        }
    }
}
