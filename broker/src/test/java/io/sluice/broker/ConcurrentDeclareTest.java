package io.sluice.broker;

import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.ReconnectPolicy;
import io.sluice.client.SluiceException;
import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.Frame;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Many declares at once, from many connections and pipelined on one: each is answered once, every queue
 * answered OK is there after a restart with its settings, {@code limits.max-queues} stays exact, and the
 * frames a connection sends after its declares still wait for them.
 */
@Tag("slow")
class ConcurrentDeclareTest {
    @TempDir
    Path dir;
    private Broker broker;
    private final List<AutoCloseable> toClose = new ArrayList<>();

    @AfterEach
    void stop() throws Exception {
        for (AutoCloseable c : toClose) {
            c.close();
        }
        if (broker != null) {
            broker.close();
        }
    }

    @Test
    void aThousandConcurrentDeclaresAllSucceedAndTheQueuesSurviveARestart() {
        broker = TestBrokers.start(dir, Map.of());
        QueueSettings withSettings = QueueSettings.builder().set(QueueSettings.MAX_DELIVERIES, 7L).build();
        List<Connection> connections = new ArrayList<>();
        for (int c = 0; c < 8; c++) {
            connections.add(connect());
        }
        List<CompletableFuture<Long>> answers = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            answers.add(connections.get(i % connections.size()).declareQueueAsync(name(i), settingsOf(i, withSettings)));
        }
        for (CompletableFuture<Long> answer : answers) {
            assertEquals(0L, answer.join(), "a new queue holds no message");
        }
        assertEquals(1000, broker.queues().all().size());

        closeAll();
        broker.close();
        broker = TestBrokers.start(dir, Map.of());
        assertEquals(1000, broker.queues().all().size());
        for (int i = 0; i < 1000; i++) {
            assertNotNull(broker.queues().existing(name(i), settingsOf(i, withSettings)), name(i));
        }
        assertEquals(7, broker.queues().get(name(1)).options().maxDeliveries(), "settings kept across the restart");
    }

    @Test
    void maxQueuesStaysExactWhenDeclaresArriveTogether() {
        broker = TestBrokers.start(dir, Map.of("limits.max-queues", "50"));
        List<Connection> connections = new ArrayList<>();
        for (int c = 0; c < 10; c++) {
            connections.add(connect());
        }
        List<CompletableFuture<Long>> answers = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            answers.add(connections.get(i % connections.size()).declareQueueAsync(name(i), QueueSettings.EMPTY));
        }
        assertEquals(50, answeredOk(answers, 50), "declares answered OK, the other 50 refused");
        assertEquals(50, broker.queues().all().size());
    }

    /** How many of {@code answers} are OK; each other one must be the refusal past {@code limits.max-queues} {@code maxQueues}. */
    static int answeredOk(List<CompletableFuture<Long>> answers, int maxQueues) {
        int ok = 0;
        for (CompletableFuture<Long> answer : answers) {
            try {
                answer.join();
                ok++;
            } catch (CompletionException e) {
                SluiceException refusal = assertInstanceOf(SluiceException.class, e.getCause());
                assertEquals(ErrorCode.RESOURCE_LIMIT, refusal.errorCode(), refusal.getMessage());
                assertTrue(refusal.getMessage().contains("above limits.max-queues " + maxQueues), refusal.getMessage());
            }
        }
        return ok;
    }

    @Test
    void framesAfterPipelinedDeclaresWaitForThemAndAnswersComeOncePerRequest() throws Exception {
        broker = TestBrokers.start(dir, Map.of());
        try (RawClient raw = RawClient.connected(broker.port())) {
            for (int i = 0; i < 20; i++) {
                raw.send(new DeclareQueueFrame(i + 1, name(i), QueueSettings.EMPTY));
            }
            raw.send(new DeclareQueueFrame(21, name(3), QueueSettings.EMPTY)); // again: the same queue
            raw.send(new DeclareQueueFrame(22, name(4), QueueSettings.builder().set(QueueSettings.MAX_DELIVERIES, 3L).build()));
            PublishFrameBuilder publish = new PublishFrameBuilder(raw.alloc(), name(19));
            publish.add(1, 1, List.of(), "after the declares".getBytes(StandardCharsets.UTF_8));
            raw.send(publish.build()); // sent without waiting: handled once queue 19 is declared

            Set<Long> ok = new HashSet<>();
            ErrorFrame differentSettings = null;
            boolean confirmed = false;
            while (ok.size() + (differentSettings == null ? 0 : 1) < 22 || !confirmed) {
                Frame f = raw.expect(Frame.class);
                if (f instanceof OkFrame answer) {
                    assertTrue(ok.add(answer.requestId()), "one answer per request: " + answer);
                } else if (f instanceof ErrorFrame error) {
                    assertEquals(22, error.requestId(), error.toString());
                    assertEquals(ErrorCode.QUEUE_EXISTS_WITH_DIFFERENT_SETTINGS, error.errorCode());
                    differentSettings = error;
                } else if (f instanceof ConfirmFrame) {
                    assertEquals(21, ok.size(), "the publish is handled after every declare sent before it");
                    confirmed = true;
                }
            }
            assertEquals(21, ok.size());
        }
    }

    private static String name(int i) {
        return "declared-" + i;
    }

    /** Every other queue is declared with a setting, so that settings files are part of the groups too. */
    private static QueueSettings settingsOf(int i, QueueSettings withSettings) {
        return i % 2 == 1 ? withSettings : QueueSettings.EMPTY;
    }

    /**
     * A request timeout far above what the declares take, so that the test checks answers and not the
     * machine's speed (the code before grouping missed the client's default 10 s here).
     */
    private Connection connect() {
        Connection c = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                .reconnectPolicy(ReconnectPolicy.DISABLED).requestTimeout(Duration.ofMinutes(5)).build());
        toClose.add(c);
        return c;
    }

    private void closeAll() throws RuntimeException {
        for (AutoCloseable c : toClose) {
            try {
                c.close();
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }
        toClose.clear();
    }
}
