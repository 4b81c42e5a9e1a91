package io.sluice.broker;

import ch.qos.logback.classic.Level;
import io.netty.channel.Channel;
import io.sluice.broker.net.ClientSessionAdapter;
import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Message;
import io.sluice.client.ReconnectPolicy;
import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.HelloOkFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.MessageHeader;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import io.sluice.protocol.TxBeginFrame;
import io.sluice.protocol.TxCommitFrame;
import io.sluice.protocol.TxPublishFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The broker's own count of what a connection's unsettled publishes hold, headers and payload (docs/flow-control.md,
 * "Producer credit", rule W2). A client that did not ask for WINDOW_COUNTS_HEADERS has a window of payload bytes: before
 * this count, such a client with large headers and tiny payloads stayed within its window while the broker held a window
 * of messages (10,000 by default) of headers each up to storage.max-message-bytes. Now the broker stops reading it once
 * its messages hold more than {@code broker.publish-window-bytes}, and reads on as they are settled.
 */
@Timeout(120)
class HeldPublishBytesTest {
    private static final int WINDOW_BYTES = 64 * 1024;
    private static final int MESSAGES = 200;
    private static final int HEADER_VALUE_BYTES = 16 * 1024;
    /** The header entry "h" (key length, key, value length, value) and a one-byte payload. */
    private static final int MESSAGE_BYTES = 2 + 1 + 4 + HEADER_VALUE_BYTES + 1;
    /** What one socket read past the bound can add: 64 KiB, and the frame it completes. */
    private static final int ONE_READ_BYTES = 64 * 1024 + MESSAGE_BYTES;

    @TempDir
    Path dir;

    /**
     * A client from before the capability publishes messages of 16 KiB headers and one-byte payloads, within its window
     * (200 messages, 200 bytes of payload) to a queue that holds its confirms back (SLOWED from its first message, no
     * consumer yet). The broker stops reading it about one window of bytes in; once a consumer drains the queue,
     * every message is stored and confirmed once, and the count is back to 0.
     */
    @Test
    void aLegacyClientWithLargeHeadersIsNotReadPastTheWindowsBytesAndLosesNothing() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of("broker.publish-window-bytes", String.valueOf(WINDOW_BYTES)));
             RawClient raw = new RawClient(broker.port())) {
            broker.queues().declare("q", QueueSettings.builder().quotaMessages(1, 0).build()); // SLOWED at once: confirms wait
            raw.send(new HelloFrame(1, 1, "legacy", 0, 0, "", "", HelloFrame.CAPABILITY_TRANSACTIONS)); // no WINDOW_COUNTS_HEADERS
            assertEquals(0, raw.expect(HelloOkFrame.class).flags() & HelloFrame.CAPABILITY_WINDOW_COUNTS_HEADERS);
            Channel served = TestBrokers.servedChannel(broker, raw);
            List<MessageHeader> headers = List.of(new MessageHeader("h", new byte[HEADER_VALUE_BYTES]));
            for (long sequence = 1; sequence <= MESSAGES; sequence++) {
                PublishFrameBuilder frame = new PublishFrameBuilder(raw.alloc(), "q");
                frame.add(7, sequence, headers, new byte[1]);
                raw.sendAsync(frame.build()); // its writes back up once the broker stops reading
            }
            var queue = broker.queues().get("q");
            TestAwait.until("the broker stops reading the client, or stores every message",
                    () -> !served.config().isAutoRead() || queue.store().unackedMessages() == MESSAGES);
            // The frames of the read that paused it are handed to the queue first, then stored.
            served.eventLoop().submit(() -> { }).get(10, TimeUnit.SECONDS);
            queue.executor().submit(() -> { }).get(10, TimeUnit.SECONDS);
            long stored = queue.store().unackedMessages();
            assertTrue(stored * MESSAGE_BYTES <= WINDOW_BYTES + ONE_READ_BYTES, "the broker read " + stored + " messages, "
                    + stored * MESSAGE_BYTES + " bytes of headers and payload, for a client of " + stored
                    + " bytes of payload window; the bound is " + WINDOW_BYTES + " and one read");
            assertFalse(served.config().isAutoRead(), "reading paused");
            assertEquals(stored * MESSAGE_BYTES, heldBytes(served), "the count holds what was read");

            try (Connection c = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                    .reconnectPolicy(ReconnectPolicy.DISABLED).build())) {
                Consumer consumer = c.subscribe("q", new ConsumerOptions(50, 16, Duration.ofMillis(1)), Message::ack);
                long confirmed = 0;
                while (confirmed < MESSAGES) {
                    ConfirmFrame confirm = next(raw, ConfirmFrame.class); // after FLOW SLOWED
                    for (IdRange range : confirm.sequences()) {
                        confirmed += range.to() - range.from() + 1;
                    }
                }
                assertEquals(MESSAGES, confirmed, "every message confirmed once");
                TestAwait.until("every message consumed", () -> queue.store().unackedMessages() == 0);
                consumer.close();
            }
            TestAwait.until("the window given back", Duration.ofSeconds(10), () -> raw.publishCredit.get() == MESSAGES);
            assertEquals(MESSAGES, raw.publishCreditBytes.get(), "the window, of payload bytes, given back whole");
            assertEquals(0, heldBytes(served), "the count given back whole");
            assertTrue(served.config().isAutoRead(), "reading again");
        }
    }

    /**
     * While the broker does not read a connection it paused, two heartbeat intervals without a frame are its own doing:
     * the reader-idle event that would close the connection for silence (HEARTBEAT_TIMEOUT) leaves it open, and the
     * client paused within its window gets every confirm once a consumer drains the queue. Before, the legacy client of
     * the test above was closed for silence whenever its confirms waited longer than two heartbeat intervals.
     */
    @Test
    void aClientPausedByTheBrokerIsNotClosedForTheSilenceThePauseMakes() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of("broker.publish-window-bytes", String.valueOf(WINDOW_BYTES)));
             RawClient raw = new RawClient(broker.port())) {
            broker.queues().declare("q", QueueSettings.builder().quotaMessages(1, 0).build()); // SLOWED at once: confirms wait
            raw.send(new HelloFrame(1, 1, "legacy", 0, 0, "", "", 0));
            raw.expect(HelloOkFrame.class);
            Channel served = TestBrokers.servedChannel(broker, raw);
            List<MessageHeader> headers = List.of(new MessageHeader("h", new byte[HEADER_VALUE_BYTES]));
            for (long sequence = 1; sequence <= MESSAGES; sequence++) {
                PublishFrameBuilder frame = new PublishFrameBuilder(raw.alloc(), "q");
                frame.add(7, sequence, headers, new byte[1]);
                raw.sendAsync(frame.build());
            }
            TestAwait.until("the broker stops reading the client", () -> !served.config().isAutoRead());
            // What the IdleStateHandler fires after two heartbeat intervals without a read.
            served.eventLoop().submit(() -> served.pipeline().fireUserEventTriggered(
                    io.netty.handler.timeout.IdleStateEvent.FIRST_READER_IDLE_STATE_EVENT)).get(10, TimeUnit.SECONDS);

            try (Connection c = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                    .reconnectPolicy(ReconnectPolicy.DISABLED).build())) {
                Consumer consumer = c.subscribe("q", new ConsumerOptions(50, 16, Duration.ofMillis(1)), Message::ack);
                long confirmed = 0;
                while (confirmed < MESSAGES) {
                    ConfirmFrame confirm = next(raw, ConfirmFrame.class);
                    for (IdRange range : confirm.sequences()) {
                        confirmed += range.to() - range.from() + 1;
                    }
                }
                assertEquals(MESSAGES, confirmed, "every message confirmed once, on the same connection");
                consumer.close();
            }
            assertTrue(served.isActive(), "the paused connection was not closed");
        }
    }

    /**
     * A client from before the capability with small headers is not slowed by the count: it fills its whole window of
     * messages (100 here, each with 100 bytes of headers and 400 of payload) while the queue holds every confirm, and the
     * broker reads all of it, 50,700 bytes held against a bound of 65,536.
     */
    @Test
    void aLegacyClientWithSmallHeadersIsReadUpToItsWholeWindow() throws Exception {
        int messages = 100;
        int messageBytes = 2 + 1 + 4 + 100 + 400;
        try (LogCapture log = LogCapture.of("io.sluice.broker.net.ClientSessionAdapter");
             Broker broker = TestBrokers.start(dir, Map.of("broker.publish-window-bytes", String.valueOf(WINDOW_BYTES),
                     "broker.publish-window-messages", String.valueOf(messages)));
             RawClient raw = new RawClient(broker.port())) {
            broker.queues().declare("q", QueueSettings.builder().quotaMessages(1, 0).build()); // SLOWED at once: confirms wait
            raw.send(new HelloFrame(1, 1, "legacy", 0, 0, "", "", 0));
            raw.expect(HelloOkFrame.class);
            Channel served = TestBrokers.servedChannel(broker, raw);
            for (long sequence = 1; sequence <= messages; sequence++) {
                PublishFrameBuilder frame = new PublishFrameBuilder(raw.alloc(), "q");
                frame.add(7, sequence, List.of(new MessageHeader("h", new byte[100])), new byte[400]);
                raw.send(frame.build());
            }
            var queue = broker.queues().get("q");
            TestAwait.until("every message stored", () -> queue.store().unackedMessages() == messages);
            assertEquals((long) messages * messageBytes, heldBytes(served), "held, their confirms waiting");
            assertTrue(served.config().isAutoRead(), "still reading");
            assertEquals(0, log.count(Level.INFO, "bytes of headers and payload published"), "never paused: " + log.events());
        }
    }

    /**
     * Every path that settles a message gives back exactly the headers and payload it took, for a client that counts its
     * window in payload bytes and for one granted WINDOW_COUNTS_HEADERS: refused at the edge (an unknown queue), stored
     * and confirmed, a resend of a stored message (a duplicate), refused by a quota (policy reject), a TX_PUBLISH staged
     * and committed, a TX_PUBLISH of no open transaction, and confirms a deleted queue refuses. After each the count is 0,
     * and after a long run of them all it has not drifted.
     */
    @Test
    void everyPathThatSettlesAMessageGivesBackExactlyWhatItHeld() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of("broker.publish-window-bytes", String.valueOf(WINDOW_BYTES)))) {
            broker.queues().declare("q", QueueSettings.EMPTY);
            broker.queues().declare("full", QueueSettings.builder().quotaMessages(0, 1).overflowPolicy("reject").build());
            for (int capabilities : new int[] {HelloFrame.CAPABILITY_TRANSACTIONS, HelloFrame.KNOWN_CAPABILITIES}) {
                try (RawClient raw = new RawClient(broker.port())) {
                    raw.send(new HelloFrame(1, 1, "raw", 0, 0, "", "", capabilities));
                    raw.expect(HelloOkFrame.class);
                    Channel served = TestBrokers.servedChannel(broker, raw);
                    long producer = capabilities;
                    long sequence = 0;
                    for (int round = 0; round < 25; round++) {
                        sequence = settle(raw, served, "missing", producer, sequence + 1, 0, "refused: unknown queue");
                        sequence = settle(raw, served, "q", producer, sequence + 1, 0, "stored");
                        settle(raw, served, "q", producer, sequence - 2, 0, "resent: duplicates");
                        sequence = settle(raw, served, "full", producer, sequence + 1, 0, "stored or refused by the quota");
                        long txnId = round + 1;
                        raw.send(new TxBeginFrame(txnId, 0));
                        settle(raw, served, "q", 0, 0, txnId, "staged");
                        raw.send(new TxCommitFrame(txnId, txnId));
                        next(raw, OkFrame.class);
                        settle(raw, served, "q", 0, 0, 1_000_000, "a TX_PUBLISH of a transaction not open");
                    }
                    broker.queues().declare("slowed", QueueSettings.builder().quotaMessages(1, 0).build());
                    PublishFrameBuilder frame = new PublishFrameBuilder(raw.alloc(), "slowed");
                    frame.add(producer, 1, List.of(new MessageHeader("h", new byte[1000])), new byte[1]);
                    frame.add(producer, 2, List.of(new MessageHeader("h", new byte[1000])), new byte[1]);
                    long creditAfter = raw.publishCredit.get() + 2;
                    raw.send(frame.build());
                    var slowed = broker.queues().get("slowed");
                    TestAwait.until("both stored, their confirms held", () -> slowed.store().unackedMessages() == 2);
                    assertEquals(2 * (2 + 1 + 4 + 1000 + 1), heldBytes(served), "held while their confirms wait");
                    broker.queues().delete("slowed"); // the confirms still waiting are refused
                    TestAwait.until("the window of the refused confirms back", () -> raw.publishCredit.get() == creditAfter);
                    assertEquals(0, heldBytes(served), "given back by the refusal of a deleted queue");
                }
            }
        }
    }

    /**
     * Publishes three messages with a header (as a TX_PUBLISH of {@code txnId} unless it is 0), waits until their window
     * is back, and checks the held count is 0 again; returns the last sequence.
     */
    private static long settle(RawClient raw, Channel served, String queue, long producer, long firstSequence, long txnId,
                               String path) throws Exception {
        PublishFrameBuilder frame = new PublishFrameBuilder(raw.alloc(), queue);
        for (long sequence = firstSequence; sequence < firstSequence + 3; sequence++) {
            frame.add(producer, producer == 0 ? 0 : sequence, List.of(new MessageHeader("h", new byte[500])), new byte[3]);
        }
        long creditAfter = raw.publishCredit.get() + 3;
        raw.send(txnId != 0 ? new TxPublishFrame(txnId, frame.build()) : frame.build());
        TestAwait.until("the window of three messages " + path, () -> raw.publishCredit.get() >= creditAfter);
        assertEquals(0, heldBytes(served), "the held bytes of three messages " + path + ", given back");
        return firstSequence + 2;
    }

    /** The next frame of that type the client received, those before it passed (confirms, refusals, errors). */
    private static <T> T next(RawClient raw, Class<T> type) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadline) {
            Object o = raw.received.poll(10, TimeUnit.MILLISECONDS);
            if (type.isInstance(o)) {
                return type.cast(o);
            }
        }
        throw new AssertionError("no " + type.getSimpleName() + " within 10 s");
    }

    private static long heldBytes(Channel served) throws Exception {
        return served.eventLoop().submit(() -> served.pipeline().get(ClientSessionAdapter.class).publishHeldBytes())
                .get(10, TimeUnit.SECONDS);
    }
}
