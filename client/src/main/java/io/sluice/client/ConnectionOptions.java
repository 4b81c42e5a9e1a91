package io.sluice.client;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

/**
 * Where and how a {@link Connection} reaches the broker. Immutable; build with {@link #builder()}.
 *
 * <p>Defaults: {@code localhost:7672}, anonymous (empty user and password), client name "sluice-java",
 * connect timeout 10 s, request timeout 10 s, heartbeat and maxFrameBytes chosen by the broker, reconnect
 * {@link ReconnectPolicy#DEFAULT}, plaintext.
 *
 * <p>TLS: {@code tls(true)} speaks TLSv1.3 or TLSv1.2 (JDK provider), trusting the CAs of a PEM file
 * ({@code trustCertificates}), of a trust store ({@code trustStore}) or else the JDK's default trust store,
 * and verifying that the broker's certificate names {@code host} (on by default). A client certificate and
 * key ({@code clientCertificate}) answer a broker that asks for one (mutual TLS).
 *
 * <p>Callbacks ({@link MessageHandler}s, {@link FlowListener}s, the {@link ErrorListener}, and whatever is chained on a future the
 * client completes) run on a dispatch pool by default, so they may block. {@code callbacksOnNetworkThread(true)}
 * runs them on the connection's network thread instead: no thread hand-off per DELIVER or CONFIRM frame (W1's
 * p99 falls by about a fifth on two cores; docs/performance.md), for callbacks that never block. There, a
 * callback that blocks stalls every producer and consumer of the connection, and the client's own blocking
 * calls (of any connection) fail there with {@link IllegalStateException} instead of waiting; a callback that
 * throws is logged and the connection carries on.
 */
public final class ConnectionOptions {
    /** The broker's default port. */
    public static final int DEFAULT_PORT = 7672;

    private final String host;
    private final int port;
    /** A cluster's nodes as host:port; empty for one broker at host:port. */
    private final java.util.List<String> bootstrap;
    private final String user;
    private final String password;
    private final String clientName;
    private final Duration connectTimeout;
    private final Duration requestTimeout;
    private final Duration heartbeat;
    private final int maxFrameBytes;
    private final ReconnectPolicy reconnectPolicy;
    private final boolean tls;
    private final Path trustCertificates;
    private final Path trustStore;
    private final char[] trustStorePassword;
    private final boolean hostnameVerification;
    private final Path clientCertificate;
    private final Path clientKey;
    private final boolean callbacksOnNetworkThread;
    private final ErrorListener errorListener;

    private ConnectionOptions(Builder builder) {
        this.callbacksOnNetworkThread = builder.callbacksOnNetworkThread;
        this.errorListener = builder.errorListener;
        this.tls = builder.tls;
        this.trustCertificates = builder.trustCertificates;
        this.trustStore = builder.trustStore;
        this.trustStorePassword = builder.trustStorePassword;
        this.hostnameVerification = builder.hostnameVerification;
        this.clientCertificate = builder.clientCertificate;
        this.clientKey = builder.clientKey;
        this.host = builder.host;
        this.port = builder.port;
        this.bootstrap = java.util.List.copyOf(builder.bootstrap);
        this.user = builder.user;
        this.password = builder.password;
        this.clientName = builder.clientName;
        this.connectTimeout = builder.connectTimeout;
        this.requestTimeout = builder.requestTimeout;
        this.heartbeat = builder.heartbeat;
        this.maxFrameBytes = builder.maxFrameBytes;
        this.reconnectPolicy = builder.reconnectPolicy;
    }

    public static Builder builder() {
        return new Builder();
    }

    public String host() {
        return host;
    }

    public int port() {
        return port;
    }

    /**
     * The nodes of a cluster to connect to, as {@code host:port}, in the order tried; empty (the default)
     * to connect to {@link #host()}:{@link #port()} alone. With a list, the connection goes to the leader:
     * a node that is not the leader names it (CLOSE NOT_LEADER) and the client follows, at the first connect
     * and after every loss (docs/protocol.md, "Clusters").
     */
    public java.util.List<String> bootstrap() {
        return bootstrap;
    }

    public String user() {
        return user;
    }

    public String password() {
        return password;
    }

    public String clientName() {
        return clientName;
    }

    /** Bounds TCP connect plus HELLO/HELLO_OK, for the first connection and for each reconnect attempt. */
    public Duration connectTimeout() {
        return connectTimeout;
    }

    /** The deadline of blocking calls and of the futures of queue requests. */
    public Duration requestTimeout() {
        return requestTimeout;
    }

    /** The heartbeat interval asked for in HELLO; zero lets the broker choose. */
    public Duration heartbeat() {
        return heartbeat;
    }

    /** The largest frame asked for in HELLO; zero lets the broker choose. */
    public int maxFrameBytes() {
        return maxFrameBytes;
    }

    public ReconnectPolicy reconnectPolicy() {
        return reconnectPolicy;
    }

    public boolean tls() {
        return tls;
    }

    /** PEM file of the CAs to trust, or null. */
    public Path trustCertificates() {
        return trustCertificates;
    }

    /** Trust store (PKCS12 or JKS) of the CAs to trust, or null. */
    public Path trustStore() {
        return trustStore;
    }

    public char[] trustStorePassword() {
        return trustStorePassword == null ? null : trustStorePassword.clone();
    }

    public boolean hostnameVerification() {
        return hostnameVerification;
    }

    /** PEM certificate chain for mutual TLS, or null. */
    public Path clientCertificate() {
        return clientCertificate;
    }

    /** PEM PKCS#8 private key for mutual TLS, or null. */
    public Path clientKey() {
        return clientKey;
    }

    /** Whether callbacks run on the network thread instead of the dispatch pool; off by default. */
    public boolean callbacksOnNetworkThread() {
        return callbacksOnNetworkThread;
    }

    /** Told of each ERROR the broker sends to no request, or null (the default: they are only logged). */
    public ErrorListener errorListener() {
        return errorListener;
    }

    /** Collects options; {@link #build()} validates them all at once. Not thread-safe. */
    public static final class Builder {
        private String host = "localhost";
        private int port = DEFAULT_PORT;
        private java.util.List<String> bootstrap = java.util.List.of();
        private String user = "";
        private String password = "";
        private String clientName = "sluice-java";
        private Duration connectTimeout = Duration.ofSeconds(10);
        private Duration requestTimeout = Duration.ofSeconds(10);
        private Duration heartbeat = Duration.ZERO;
        private int maxFrameBytes;
        private ReconnectPolicy reconnectPolicy = ReconnectPolicy.DEFAULT;
        private boolean tls;
        private Path trustCertificates;
        private Path trustStore;
        private char[] trustStorePassword;
        private boolean hostnameVerification = true;
        private Path clientCertificate;
        private Path clientKey;
        private boolean callbacksOnNetworkThread;
        private ErrorListener errorListener;

        private Builder() {
        }

        public Builder tls(boolean tls) {
            this.tls = tls;
            return this;
        }

        /** Trust the CAs in this PEM file (instead of the JDK's default trust store). */
        public Builder trustCertificates(Path pemFile) {
            this.trustCertificates = Objects.requireNonNull(pemFile, "pemFile");
            return this;
        }

        /** Trust the CAs in this PKCS12 or JKS trust store (instead of the JDK's default one). */
        public Builder trustStore(Path file, char[] password) {
            this.trustStore = Objects.requireNonNull(file, "file");
            this.trustStorePassword = password == null ? null : password.clone();
            return this;
        }

        /** Whether the broker's certificate must name the host connected to; on by default. */
        public Builder hostnameVerification(boolean hostnameVerification) {
            this.hostnameVerification = hostnameVerification;
            return this;
        }

        /** The certificate chain and PKCS#8 key (PEM) presented when the broker asks (mutual TLS). */
        public Builder clientCertificate(Path certificatePem, Path privateKeyPem) {
            this.clientCertificate = Objects.requireNonNull(certificatePem, "certificatePem");
            this.clientKey = Objects.requireNonNull(privateKeyPem, "privateKeyPem");
            return this;
        }

        public Builder host(String host) {
            this.host = Objects.requireNonNull(host, "host");
            return this;
        }

        /** A cluster's nodes, {@code host:port} each; see {@link ConnectionOptions#bootstrap()}. */
        public Builder bootstrap(java.util.List<String> hostsAndPorts) {
            this.bootstrap = java.util.List.copyOf(hostsAndPorts);
            return this;
        }

        public Builder port(int port) {
            this.port = port;
            return this;
        }

        public Builder credentials(String user, String password) {
            this.user = Objects.requireNonNull(user, "user");
            this.password = Objects.requireNonNull(password, "password");
            return this;
        }

        public Builder clientName(String clientName) {
            this.clientName = Objects.requireNonNull(clientName, "clientName");
            return this;
        }

        public Builder connectTimeout(Duration connectTimeout) {
            this.connectTimeout = Objects.requireNonNull(connectTimeout, "connectTimeout");
            return this;
        }

        public Builder requestTimeout(Duration requestTimeout) {
            this.requestTimeout = Objects.requireNonNull(requestTimeout, "requestTimeout");
            return this;
        }

        public Builder heartbeat(Duration heartbeat) {
            this.heartbeat = Objects.requireNonNull(heartbeat, "heartbeat");
            return this;
        }

        public Builder maxFrameBytes(int maxFrameBytes) {
            this.maxFrameBytes = maxFrameBytes;
            return this;
        }

        public Builder reconnectPolicy(ReconnectPolicy reconnectPolicy) {
            this.reconnectPolicy = Objects.requireNonNull(reconnectPolicy, "reconnectPolicy");
            return this;
        }

        /**
         * Runs handlers, flow listeners and future completions on the network thread, for callbacks that never
         * block; see the class comment.
         */
        public Builder callbacksOnNetworkThread(boolean callbacksOnNetworkThread) {
            this.callbacksOnNetworkThread = callbacksOnNetworkThread;
            return this;
        }

        /**
         * Tells {@code listener} of each ERROR the broker sends to no request, such as STORAGE_FAILED for an ack the
         * queue's storage failed to apply; null (the default) only logs them. See {@link ErrorListener}.
         */
        public Builder errorListener(ErrorListener listener) {
            this.errorListener = listener;
            return this;
        }

        private static void checkWireString(String option, String value, StringBuilder problems) {
            int utf8Bytes = io.netty.buffer.ByteBufUtil.utf8Bytes(value);
            if (utf8Bytes > QueueName.MAX_UTF8_BYTES) {
                problems.append("; ").append(option).append(" is ").append(utf8Bytes)
                        .append(" UTF-8 bytes, above the limit of ").append(QueueName.MAX_UTF8_BYTES);
            }
        }

        /** Checks every option and reports every invalid one in a single exception. */
        public ConnectionOptions build() {
            StringBuilder problems = new StringBuilder();
            for (String address : bootstrap) {
                try {
                    io.sluice.client.internal.BrokerAddresses.Address.parse(address);
                } catch (IllegalArgumentException e) {
                    problems.append("; bootstrap: ").append(e.getMessage());
                }
            }
            if (port < 1 || port > 65535) {
                problems.append("; port ").append(port).append(" is outside 1..65535");
            }
            if ((connectTimeout.isNegative() || connectTimeout.isZero())) {
                problems.append("; connectTimeout ").append(connectTimeout).append(" must be positive");
            }
            if ((requestTimeout.isNegative() || requestTimeout.isZero())) {
                problems.append("; requestTimeout ").append(requestTimeout).append(" must be positive");
            }
            if (heartbeat.isNegative() || heartbeat.toMillis() > Integer.MAX_VALUE) {
                problems.append("; heartbeat ").append(heartbeat).append(" is outside 0..")
                        .append(Integer.MAX_VALUE).append(" ms");
            }
            if (maxFrameBytes < 0) {
                problems.append("; maxFrameBytes ").append(maxFrameBytes).append(" is negative");
            }
            // HELLO carries each as a wire string: longer, building HELLO threw at every connect attempt.
            checkWireString("user", user, problems);
            checkWireString("password", password, problems);
            checkWireString("clientName", clientName, problems);
            if (trustCertificates != null && trustStore != null) {
                problems.append("; trustCertificates and trustStore are both set; choose one");
            }
            for (Path file : new Path[] {trustCertificates, trustStore, clientCertificate, clientKey}) {
                if (file != null && !Files.isReadable(file)) {
                    problems.append("; TLS file ").append(file).append(" is not readable");
                }
            }
            if (!tls && (trustCertificates != null || trustStore != null || clientCertificate != null)) {
                problems.append("; TLS files are set but tls is false");
            }
            if (problems.length() > 0) {
                throw new IllegalArgumentException("invalid connection options: " + problems.substring(2));
            }
            return new ConnectionOptions(this);
        }
    }
}
