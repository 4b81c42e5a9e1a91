package io.sluice.broker.security;

import ch.qos.logback.classic.Level;
import io.sluice.broker.Broker;
import io.sluice.broker.LogCapture;
import io.sluice.broker.config.ConfigException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Safe by default: an exposed listener needs users or an explicit, loudly logged opt-in. */
class SafeDefaultsTest {
    @TempDir
    Path dir;

    @Test
    void loopbackRunsAnonymouslyByDefault() throws Exception {
        try (Broker broker = SecurityFixture.start(dir, null, Map.of())) {
            assertTrue(broker.port() > 0);
        }
    }

    @Test
    void nonLoopbackWithoutUsersIsRefused() {
        ConfigException e = assertThrows(ConfigException.class,
                () -> SecurityFixture.config(dir, null, Map.of("broker.listen-address", "0.0.0.0")));
        assertTrue(e.getMessage().contains("broker.listen-address 0.0.0.0 is not a loopback address and auth.users is empty"),
                e.getMessage());
        assertTrue(e.getMessage().contains("auth.allow-anonymous-remote"), e.getMessage());
    }

    @Test
    void nonLoopbackWithUsersStarts() throws Exception {
        try (Broker broker = SecurityFixture.start(dir, SecurityFixture.usersYaml(), Map.of("broker.listen-address", "0.0.0.0"))) {
            assertTrue(broker.port() > 0);
        }
    }

    @Test
    void explicitAnonymousRemoteStartsAndWarnsAtEveryStart() throws Exception {
        try (LogCapture log = LogCapture.of(ListenerExposure.class)) {
            Map<String, String> overrides = Map.of("broker.listen-address", "0.0.0.0", "auth.allow-anonymous-remote", "true");
            for (int start = 0; start < 2; start++) {
                try (Broker broker = SecurityFixture.start(dir, null, overrides)) {
                    assertTrue(broker.port() > 0);
                }
            }
            assertEquals(2, log.count(Level.WARN, "anonymous access"));
        }
    }

    @Test
    void securityKeysAreValidatedTogether() {
        ConfigException e = assertThrows(ConfigException.class, () -> SecurityFixture.config(dir, """
                auth:
                  anonymous-permissions:
                    - queues: "x"
                      actions: [publish, destroy]
                  backoff-after-failures: 0
                  backoff-initial-ms: 5000
                  backoff-max-ms: 1000
                tls:
                  enabled: true
                  client-auth: sometimes
                limits:
                  max-connections: 0
                """, Map.of()));
        String m = e.getMessage();
        assertTrue(m.contains("auth.anonymous-permissions[0].actions: action 'destroy' is not one of publish, consume, manage, monitor"), m);
        assertTrue(m.contains("tls.client-auth 'sometimes' is not one of none, optional, require"), m);
        assertTrue(m.contains("tls.certificate is empty but tls.enabled is true"), m);
        assertTrue(m.contains("limits.max-connections 0 is outside 1..10000000"), m);
        assertTrue(m.contains("auth.backoff-after-failures 0 is outside 1..1000"), m);
        assertTrue(m.contains("auth.backoff-max-ms 1000 is outside 5000..86400000"), m);
        assertFalse(m.contains("max-queues"), m);
    }
}
