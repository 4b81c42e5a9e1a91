package io.sluice.broker.net;

import io.netty.buffer.ByteBufAllocator;
import io.sluice.broker.TestAwait;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.QueueCore;
import io.sluice.protocol.AckFrame;
import io.sluice.protocol.CloseFrame;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.MessageHeader;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.PublishCreditFrame;
import io.sluice.protocol.PublishErrorFrame;
import io.sluice.protocol.PublishFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import io.sluice.protocol.SubscribeFrame;
import io.sluice.protocol.UnsubscribeFrame;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The network edge without sockets: a real {@link ClientSessionAdapter} at the broker's end of a
 * {@link LocalConnection}, in front of a real queue core ({@link QueueCore}) on a loop of its own,
 * with a publish window of two messages.
 */
class ClientSessionAdapterTest {
    private static final int WINDOW_MESSAGES = 2;
    private static final int PAYLOAD_BYTES = 10;
    private static final int WINDOW_BYTES = 1024;
    /** A header entry's key length, key "h" and value length. */
    private static final int HEADER_ENTRY_OVERHEAD_BYTES = 2 + 1 + 4;

    @TempDir
    Path dir;
    private QueueCore core;
    private LocalConnection connection;

    private void open(Map<String, String> overrides) throws Exception {
        open(overrides, HelloFrame.KNOWN_CAPABILITIES);
    }

    /** {@code capabilities}: what HELLO_OK granted the connection. */
    private void open(Map<String, String> overrides, int capabilities) throws Exception {
        Map<String, String> all = new HashMap<>(Map.of("storage.durability", "never",
                "broker.publish-window-messages", Integer.toString(WINDOW_MESSAGES)));
        all.putAll(overrides);
        core = new QueueCore(dir, all);
        connection = LocalConnection.inFrontOf(core, capabilities);
    }

    @AfterEach
    void close() {
        if (connection != null) {
            connection.close();
        }
        if (core != null) {
            core.close();
        }
    }

    @Test
    void shouldPauseReadingPastThePublishWindowAndResumeOnceTheCreditIsWritten() throws Exception {
        open(Map.of());
        BrokerQueue q = core.queues.declare("q", QueueSettings.builder().build());
        CountDownLatch queueHeld = holdExecutor(q);
        connection.send(publish("q", 3));
        TestAwait.until("reading paused: three messages out of a window of two", () -> !connection.reading());
        queueHeld.countDown();

        assertEquals(List.of(new PublishCreditFrame(3, 3 * PAYLOAD_BYTES)), connection.await(PublishCreditFrame.class, 1));
        TestAwait.until("reading resumed once the window came back", connection::reading);

        // All three came back, once: a whole window published now pauses nothing.
        CountDownLatch heldAgain = holdExecutor(q);
        connection.send(publish("q", WINDOW_MESSAGES));
        awaitHandled(11);
        assertTrue(connection.reading(), "a window of exactly two out: reading goes on");
        heldAgain.countDown();
        connection.await(PublishCreditFrame.class, 2);
    }

    @Test
    void shouldRefuseAPublishToAnUnknownQueueAtTheEdgeAndGiveItsWindowBackAtOnce() throws Exception {
        open(Map.of());
        connection.send(publish("missing", 3));
        List<PublishErrorFrame> refused = connection.await(PublishErrorFrame.class, 3);
        assertTrue(refused.stream().allMatch(e -> e.errorCode() == ErrorCode.UNKNOWN_QUEUE), refused.toString());
        assertEquals(List.of(new PublishCreditFrame(3, 3 * PAYLOAD_BYTES)), connection.await(PublishCreditFrame.class, 1));
        awaitHandled(12);
        assertTrue(connection.reading(), "what was refused at once holds no window");

        // The refusal took as much window as it gave back: the next overrun is still seen.
        BrokerQueue q = core.queues.declare("q", QueueSettings.builder().build());
        CountDownLatch queueHeld = holdExecutor(q);
        connection.send(publish("q", 3));
        TestAwait.until("reading paused past the window", () -> !connection.reading());
        queueHeld.countDown();
        TestAwait.until("reading resumed", connection::reading);
    }

    @Test
    void shouldCountHeadersInThePublishWindowOfAClientGrantedThat() throws Exception {
        open(Map.of("broker.publish-window-bytes", Integer.toString(WINDOW_BYTES)));
        BrokerQueue q = core.queues.declare("q", QueueSettings.builder().build());
        CountDownLatch queueHeld = holdExecutor(q);
        // Two messages: within the window of two messages, and of 20 payload bytes, but over a thousand bytes each.
        connection.send(publishWithHeader("q", 2, WINDOW_BYTES - 100));
        TestAwait.until("reading paused: headers and payload past the window's bytes", () -> !connection.reading());
        queueHeld.countDown();

        long messageBytes = HEADER_ENTRY_OVERHEAD_BYTES + (WINDOW_BYTES - 100) + PAYLOAD_BYTES;
        assertEquals(List.of(new PublishCreditFrame(2, 2 * messageBytes)), connection.await(PublishCreditFrame.class, 1));
        TestAwait.until("reading resumed once the window came back", connection::reading);
    }

    @Test
    void shouldCountThePayloadAloneForAClientThatPredatesTheHeadersInItsWindow() throws Exception {
        open(Map.of("broker.publish-window-bytes", Integer.toString(WINDOW_BYTES)), HelloFrame.CAPABILITY_TRANSACTIONS);
        BrokerQueue q = core.queues.declare("q", QueueSettings.builder().build());
        CountDownLatch queueHeld = holdExecutor(q);
        // Headers and payload within the window's bytes too: the broker's own count (rule W2) does not pause it either.
        connection.send(publishWithHeader("q", 2, WINDOW_BYTES / 2 - 100));
        awaitHandled(13);
        assertTrue(connection.reading(), "20 payload bytes out of a window of " + WINDOW_BYTES + ": the unit that client takes in");
        queueHeld.countDown();
        assertEquals(List.of(new PublishCreditFrame(2, 2 * PAYLOAD_BYTES)), connection.await(PublishCreditFrame.class, 1));
    }

    /**
     * Rule W2: within its window of payload bytes, a client from before WINDOW_COUNTS_HEADERS whose messages hold more
     * headers and payload than the window's bytes is read no further until they are settled. Before, the broker read on:
     * such a client could have it hold a window of messages of headers.
     */
    @Test
    void shouldPauseAClientThatPredatesTheHeadersInItsWindowOnceItsMessagesHoldMoreThanTheWindowsBytes() throws Exception {
        open(Map.of("broker.publish-window-bytes", Integer.toString(WINDOW_BYTES)), HelloFrame.CAPABILITY_TRANSACTIONS);
        BrokerQueue q = core.queues.declare("q", QueueSettings.builder().build());
        CountDownLatch queueHeld = holdExecutor(q);
        connection.send(publishWithHeader("q", 2, WINDOW_BYTES - 100));
        TestAwait.until("reading paused: 20 payload bytes, but headers of twice the window's bytes", () -> !connection.reading());
        queueHeld.countDown();
        assertEquals(List.of(new PublishCreditFrame(2, 2 * PAYLOAD_BYTES)), connection.await(PublishCreditFrame.class, 1));
        TestAwait.until("reading resumed once they were settled", connection::reading);
    }

    @Test
    void shouldAnswerConsumerFramesItCannotApplyWithAnErrorAndKeepTheConnection() throws Exception {
        open(Map.of("limits.max-consumers-per-connection", "1"));
        core.queues.declare("q", QueueSettings.builder().build());
        connection.send(new AckFrame(9, List.of(IdRange.single(1))));
        connection.send(new SubscribeFrame(1, 5, "missing", 10));
        connection.send(new SubscribeFrame(2, 5, "q", 10));
        connection.send(new SubscribeFrame(3, 5, "q", 10));
        connection.send(new SubscribeFrame(4, 6, "q", 10));
        connection.send(new UnsubscribeFrame(5, 7));
        connection.send(new UnsubscribeFrame(6, 5));

        List<ErrorFrame> errors = connection.await(ErrorFrame.class, 5);
        assertEquals(List.of(ErrorCode.UNKNOWN_CONSUMER, ErrorCode.UNKNOWN_QUEUE, ErrorCode.CONSUMER_TAG_IN_USE,
                ErrorCode.RESOURCE_LIMIT, ErrorCode.UNKNOWN_CONSUMER), errors.stream().map(ErrorFrame::errorCode).toList());
        assertEquals(List.of(0L, 1L, 3L, 4L, 5L), errors.stream().map(ErrorFrame::requestId).toList());
        assertEquals(List.of(2L, 6L), connection.await(OkFrame.class, 2).stream().map(OkFrame::requestId).toList());
        assertTrue(connection.broker.isActive());
    }

    @Test
    void shouldCloseTheConnectionOnAHelloAfterTheHandshake() throws Exception {
        open(Map.of());
        connection.send(new HelloFrame(1, 1, "again", 0, 0, "", ""));
        assertEquals(ErrorCode.UNEXPECTED_FRAME, connection.await(CloseFrame.class, 1).get(0).errorCode());
        TestAwait.until("the connection closed", () -> !connection.broker.isActive());
        assertFalse(connection.broker.isActive());
    }

    /** Sends a passive declare and waits for its answer: every frame sent before it was handled. */
    private void awaitHandled(long requestId) throws InterruptedException {
        connection.send(new DeclareQueueFrame(requestId, "q", QueueSettings.builder().build(), true));
        TestAwait.until("the answer to request " + requestId, () -> answered(requestId));
    }

    private boolean answered(long requestId) {
        return connection.received(OkFrame.class).stream().anyMatch(ok -> ok.requestId() == requestId)
                || connection.received(ErrorFrame.class).stream().anyMatch(e -> e.requestId() == requestId);
    }

    /** Holds the queue's executor until the latch is counted down: what the connection hands it waits. */
    private static CountDownLatch holdExecutor(BrokerQueue q) {
        CountDownLatch latch = new CountDownLatch(1);
        q.executor().execute(() -> {
            try {
                latch.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        return latch;
    }

    /** Messages of {@link #PAYLOAD_BYTES} with one header "h" of {@code valueBytes}. */
    private static PublishFrame publishWithHeader(String queue, int messages, int valueBytes) {
        PublishFrameBuilder builder = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, queue);
        for (int i = 0; i < messages; i++) {
            builder.add(1, i, List.of(new MessageHeader("h", new byte[valueBytes])), new byte[PAYLOAD_BYTES]);
        }
        return builder.build();
    }

    private static PublishFrame publish(String queue, int messages) {
        PublishFrameBuilder builder = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, queue);
        for (int i = 0; i < messages; i++) {
            builder.add(1, i, List.of(), new byte[PAYLOAD_BYTES]);
        }
        return builder.build();
    }
}
