package io.sluice.broker.security;

import io.sluice.broker.metrics.MetricNames;
import io.sluice.broker.metrics.MetricsFixture;
import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.ReconnectPolicy;
import io.sluice.client.SluiceException;
import io.sluice.protocol.ErrorCode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.HelloOkFrame;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static io.sluice.broker.metrics.MetricsFixture.basic;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The brake on password guessing, through real sockets: after {@code auth.backoff-after-failures}
 * failures a source (here 127.0.0.1) is refused, the right password included, for the backoff, which
 * is long enough (10 minutes) that it cannot expire during a test; another source (a socket bound
 * to 127.0.0.2, also loopback on Linux) is not affected. Failures are counted per listener.
 */
@Timeout(180)
class PasswordGuessingTest {
    private static final String FAILURES_CLIENT = MetricNames.AUTHENTICATION_FAILURES + "{listener=\"client\"}";
    private static final String FAILURES_ADMIN = MetricNames.AUTHENTICATION_FAILURES + "{listener=\"admin\"}";
    @TempDir
    Path dir;
    private MetricsFixture fixture;

    @AfterEach
    void stop() {
        if (fixture != null) {
            fixture.close();
        }
    }

    private void start() throws Exception {
        Path config = dir.resolve("sluice.yaml");
        Files.writeString(config, SecurityFixture.usersYaml() + """
                    - name: scraper
                      password-hash: "%s"
                      permissions:
                        - queues: "*"
                          actions: [monitor]
                """.formatted(SecurityFixture.SECRET_HASH));
        fixture = new MetricsFixture(dir.resolve("data"), config, Map.of(
                "broker.listen-address", "0.0.0.0",
                "metrics.listen-address", "0.0.0.0",
                "auth.allow-anonymous", "false",
                "metrics.scrape-access", "open",
                "auth.backoff-after-failures", "3",
                "auth.backoff-initial-ms", "600000",
                "auth.backoff-max-ms", "600000"));
    }

    private Connection connect(String user, String password) {
        return Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(fixture.broker.port())
                .credentials(user, password).reconnectPolicy(ReconnectPolicy.DISABLED).build());
    }

    private SluiceException refused(String user, String password) {
        long started = System.nanoTime();
        SluiceException e = assertThrows(SluiceException.class, () -> connect(user, password).close());
        assertEquals(ErrorCode.AUTHENTICATION_FAILED, e.errorCode(), e.getMessage());
        assertTrue(System.nanoTime() - started >= Duration.ofMillis(190).toNanos(), "every refusal waits at least 200 ms");
        return e;
    }

    private double scraped(String sample) throws Exception {
        return MetricsFixture.parse(fixture.scrapeText()).getOrDefault(sample, -1.0);
    }

    /** A HELLO as alice with the right password from another source: it gets HELLO_OK. */
    private void helloFromAnotherSource() throws Exception {
        try (SocketPeer peer = new SocketPeer("127.0.0.2", fixture.broker.port())) {
            peer.send(new HelloFrame(1, 1, "other-source", 1 << 20, 0, "alice", "s3cret"));
            peer.expect(HelloOkFrame.class, 30_000);
        }
    }

    /** The status line of GET /api/queues as alice with the right password from another source. */
    private String adminFromAnotherSource() throws Exception {
        try (Socket socket = new Socket()) {
            socket.bind(new InetSocketAddress("127.0.0.2", 0));
            socket.connect(new InetSocketAddress("127.0.0.2", fixture.broker.metricsPort()), 10_000);
            socket.setSoTimeout(30_000);
            socket.getOutputStream().write(("GET /api/queues HTTP/1.1\r\nHost: 127.0.0.2\r\nAuthorization: "
                    + basic("alice", "s3cret") + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            return new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.US_ASCII)).readLine();
        }
    }

    @Test
    void shouldRefuseTheRightPasswordFromASourceInBackoffAndNotOtherSources() throws Exception {
        start();
        for (int i = 0; i < 3; i++) {
            assertTrue(refused("alice", "guess" + i).getMessage().contains("wrong user name or password"));
        }
        SluiceException blocked = refused("alice", "s3cret");
        assertTrue(blocked.getMessage().contains("too many failed authentications from 127.0.0.1"), blocked.getMessage());
        assertFalse(blocked.getMessage().contains("s3cret"));
        helloFromAnotherSource();
        assertEquals(4.0, scraped(FAILURES_CLIENT));
        assertEquals(0.0, scraped(FAILURES_ADMIN));
    }

    @Test
    void shouldCheckAtMostTheThresholdOfParallelGuesses() throws Exception {
        start();
        ExecutorService pool = Executors.newFixedThreadPool(10);
        try {
            List<Future<String>> guesses = new ArrayList<>();
            for (int i = 0; i < 30; i++) {
                String password = "guess" + i;
                guesses.add(pool.submit(() -> assertThrows(SluiceException.class,
                        () -> connect("alice", password).close()).getMessage()));
            }
            int checked = 0;
            for (Future<String> g : guesses) {
                if (g.get().contains("wrong user name or password")) {
                    checked++;
                }
            }
            assertTrue(checked <= 3, checked + " of 30 parallel guesses had their password checked");
        } finally {
            pool.shutdownNow();
        }
        refused("alice", "s3cret");
        assertEquals(31.0, scraped(FAILURES_CLIENT));
    }

    @Test
    void shouldBrakeBasicAuthOfTheAdminApiTheSameWay() throws Exception {
        start();
        for (int i = 0; i < 3; i++) {
            long started = System.nanoTime();
            HttpResponse<String> r = fixture.request("GET", "/api/queues", null, basic("alice", "guess" + i));
            assertEquals(401, r.statusCode(), r.body());
            assertTrue(System.nanoTime() - started >= Duration.ofMillis(190).toNanos(), "every refusal waits at least 200 ms");
        }
        HttpResponse<String> blocked = fixture.request("GET", "/api/queues", null, basic("alice", "s3cret"));
        assertEquals(429, blocked.statusCode(), blocked.body());
        assertTrue(blocked.body().contains("\"too_many_failures\""), blocked.body());
        assertTrue(blocked.body().contains("too many failed authentications from 127.0.0.1"), blocked.body());
        long retryAfter = Long.parseLong(blocked.headers().firstValue("Retry-After").orElse("0"));
        assertTrue(retryAfter > 60 && retryAfter <= 600, "Retry-After " + retryAfter);
        assertEquals("HTTP/1.1 200 OK", adminFromAnotherSource());
        assertEquals(4.0, scraped(FAILURES_ADMIN));
        assertEquals(0.0, scraped(FAILURES_CLIENT));
        SluiceException wire = refused("alice", "s3cret");
        assertTrue(wire.getMessage().contains("too many failed authentications"), "one table for both listeners: " + wire.getMessage());
    }
}
