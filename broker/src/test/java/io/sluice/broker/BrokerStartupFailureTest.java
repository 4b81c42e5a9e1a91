package io.sluice.broker;

import io.sluice.broker.config.ConfigLoader;
import io.sluice.storage.MessageStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An in-JVM broker that fails to start closes what it opened (the HTTP port, the store and its lock,
 * the event loops), and {@code /health/live} never says 200 for a broker whose listener is gone, nor
 * {@code /health/ready} that such a broker is shutting down.
 */
@Timeout(60)
class BrokerStartupFailureTest {
    @TempDir
    Path dir;

    @Test
    void shouldCloseTheHttpPortAndTheStoreWhenTheClientPortIsInUse() throws Exception {
        int metricsPort = TestPorts.free();
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            StartupException e = assertThrows(StartupException.class, () -> Broker.start(new ConfigLoader().load(null, Map.of(
                    "broker.data-dir", dir.toString(), "broker.port", Integer.toString(taken.getLocalPort()),
                    "metrics.port", Integer.toString(metricsPort), "storage.reserved-disk-bytes", "67108864"))));
            assertEquals("cannot listen on 127.0.0.1:" + taken.getLocalPort()
                    + " (broker.port): the address is already in use by another process", e.getMessage());
        }
        assertThrows(ConnectException.class, () -> get(metricsPort, "/health/live"),
                "nothing answers /health/live of a broker that failed to start");
        try (ServerSocket again = new ServerSocket(metricsPort, 1, InetAddress.getLoopbackAddress())) {
            assertEquals(metricsPort, again.getLocalPort(), "the metrics port is free again");
        }
        MessageStore.open(dir, new ConfigLoader().load(null, Map.of("storage.reserved-disk-bytes", "67108864")).storeConfig()).close();
    }

    /** The transaction log's store opens on a start-up thread while the queues' store recovers: a failure of either closes both. */
    @Test
    void shouldCloseTheTransactionLogsStoreWhenTheQueuesStoreCannotOpen() throws Exception {
        assertAFileInPlaceOfFailsTheStartAndLeavesUnlocked("queues", dir.resolve("transactions"));
    }

    @Test
    void shouldCloseTheQueuesStoreWhenTheTransactionLogCannotOpen() throws Exception {
        assertAFileInPlaceOfFailsTheStartAndLeavesUnlocked("transactions", dir);
    }

    /**
     * With a file where the directory {@code blocked} goes the start fails naming it, frees the metrics port, and leaves
     * the other store ({@code otherStore}), which it opened meanwhile, closed: its lock released.
     */
    private void assertAFileInPlaceOfFailsTheStartAndLeavesUnlocked(String blocked, Path otherStore) throws Exception {
        Files.writeString(dir.resolve(blocked), "a file where a directory goes");
        int metricsPort = TestPorts.free();

        StartupException e = assertThrows(StartupException.class, () -> Broker.start(config(metricsPort)));

        assertTrue(e.getMessage().contains(blocked), e.getMessage());
        assertMetricsPortFree(metricsPort);
        MessageStore.open(otherStore, storeConfig()).close();
    }

    private io.sluice.broker.config.BrokerConfig config(int metricsPort) {
        return new ConfigLoader().load(null, Map.of("broker.data-dir", dir.toString(), "broker.port", "0",
                "metrics.port", Integer.toString(metricsPort), "storage.reserved-disk-bytes", "67108864"));
    }

    private static io.sluice.storage.StoreConfig storeConfig() {
        return new ConfigLoader().load(null, Map.of("storage.reserved-disk-bytes", "67108864")).storeConfig();
    }

    private static void assertMetricsPortFree(int metricsPort) throws IOException {
        try (ServerSocket again = new ServerSocket(metricsPort, 1, InetAddress.getLoopbackAddress())) {
            assertEquals(metricsPort, again.getLocalPort(), "the metrics port is free again");
        }
    }

    @Test
    void shouldNotSayLiveOnceTheClientListenerIsClosed() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of())) {
            assertEquals(200, get(broker.metricsPort(), "/health/live").statusCode());
            int port = broker.port();
            broker.listenerChannel().close().syncUninterruptibly();
            HttpResponse<String> live = get(broker.metricsPort(), "/health/live");
            assertEquals(503, live.statusCode(), live.body());
            assertEquals("not live: the client listener on 127.0.0.1:" + port + " is closed\n", live.body());
        }
    }

    /** Found by a review: /health/ready said "the broker is shutting down" for a listener gone under a running broker. */
    @Test
    void shouldSayNotReadyBecauseTheListenerIsClosedNotThatTheBrokerIsShuttingDown() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of())) {
            assertEquals(200, get(broker.metricsPort(), "/health/ready").statusCode());
            int port = broker.port();
            broker.listenerChannel().close().syncUninterruptibly();
            HttpResponse<String> ready = get(broker.metricsPort(), "/health/ready");
            assertEquals(503, ready.statusCode(), ready.body());
            assertEquals("not ready: the client listener on 127.0.0.1:" + port + " is closed\n", ready.body());
        }
    }

    private static HttpResponse<String> get(int port, String path) throws IOException, InterruptedException {
        return HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build().send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).timeout(Duration.ofSeconds(10)).build(),
                HttpResponse.BodyHandlers.ofString());
    }
}
