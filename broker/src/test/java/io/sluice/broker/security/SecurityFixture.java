package io.sluice.broker.security;

import io.sluice.broker.Broker;
import io.sluice.broker.FrameBytes;
import io.sluice.broker.auth.PasswordHasher;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.config.ConfigLoader;
import io.sluice.protocol.HelloFrame;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/** Starts brokers for the security tests on free ports: a YAML file for the auth section plus key=value overrides. */
final class SecurityFixture {
    /** Shared so the slow PBKDF2 runs once per JVM. */
    static final String SECRET_HASH = PasswordHasher.hash("s3cret".toCharArray());

    private SecurityFixture() {
    }

    /** Users: alice (all on orders.*), bob (consume on orders.*), carol (no password: certificate-only, all on *). */
    static String usersYaml() {
        return """
                auth:
                  users:
                    - name: alice
                      password-hash: "%1$s"
                      permissions:
                        - queues: "orders.*"
                          actions: [publish, consume, manage]
                    - name: bob
                      password-hash: "%1$s"
                      permissions:
                        - queues: "orders.*"
                          actions: [consume]
                    - name: carol
                      permissions:
                        - queues: "*"
                          actions: [publish, consume, manage]
                """.formatted(SECRET_HASH);
    }

    static BrokerConfig config(Path dir, String yaml, Map<String, String> extra) throws IOException {
        Map<String, String> overrides = new HashMap<>(Map.of(
                "broker.data-dir", dir.resolve("data").toString(),
                "broker.port", "0",
                "metrics.port", "0",
                "storage.reserved-disk-bytes", "67108864"));
        overrides.putAll(extra);
        Path file = null;
        if (yaml != null) {
            file = dir.resolve("sluice-test.yaml");
            Files.writeString(file, yaml);
        }
        return new ConfigLoader().load(file, overrides);
    }

    static Broker start(Path dir, String yaml, Map<String, String> extra) throws IOException {
        return Broker.start(config(dir, yaml, extra));
    }

    /** The bytes of a HELLO from client {@code clientName} as {@code user} with {@code password}, to write to a raw socket. */
    static byte[] helloBytes(String clientName, String user, String password) {
        return FrameBytes.of(new HelloFrame(1, 1, clientName, 0, 0, user, password));
    }
}
