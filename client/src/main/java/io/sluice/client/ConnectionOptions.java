package io.sluice.client;

import java.time.Duration;
import java.util.Objects;

/**
 * Where and how a {@link Connection} reaches the broker. Immutable; build with {@link #builder()}.
 *
 * <p>Defaults: {@code localhost:7672}, anonymous (empty user and password), client name "sluice-java",
 * connect timeout 10 s, request timeout 10 s, heartbeat and maxFrameBytes chosen by the broker, reconnect
 * {@link ReconnectPolicy#DEFAULT}.
 */
public final class ConnectionOptions {
    /** The broker's default port. */
    public static final int DEFAULT_PORT = 7672;

    private final String host;
    private final int port;
    private final String user;
    private final String password;
    private final String clientName;
    private final Duration connectTimeout;
    private final Duration requestTimeout;
    private final Duration heartbeat;
    private final int maxFrameBytes;
    private final ReconnectPolicy reconnectPolicy;

    private ConnectionOptions(Builder builder) {
        this.host = builder.host;
        this.port = builder.port;
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

    /** Collects options; {@link #build()} validates them all at once. Not thread-safe. */
    public static final class Builder {
        private String host = "localhost";
        private int port = DEFAULT_PORT;
        private String user = "";
        private String password = "";
        private String clientName = "sluice-java";
        private Duration connectTimeout = Duration.ofSeconds(10);
        private Duration requestTimeout = Duration.ofSeconds(10);
        private Duration heartbeat = Duration.ZERO;
        private int maxFrameBytes;
        private ReconnectPolicy reconnectPolicy = ReconnectPolicy.DEFAULT;

        private Builder() {
        }

        public Builder host(String host) {
            this.host = Objects.requireNonNull(host, "host");
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

        /** Checks every option and reports every invalid one in a single exception. */
        public ConnectionOptions build() {
            StringBuilder problems = new StringBuilder();
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
            if (problems.length() > 0) {
                throw new IllegalArgumentException("invalid connection options: " + problems.substring(2));
            }
            return new ConnectionOptions(this);
        }
    }
}
