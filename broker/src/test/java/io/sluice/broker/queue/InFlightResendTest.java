package io.sluice.broker.queue;

import io.netty.buffer.ByteBufAllocator;
import io.sluice.broker.TestAwait;
import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.PublishErrorFrame;
import io.sluice.protocol.PublishFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * Rule R9 of docs/replication.md, resends ({@link InFlightPublishes}): on a cluster's leader, a resend of a message it
 * submitted to the log and has not applied yet is no new message. While the quota is full (with the original in it)
 * it is neither refused nor submitted again: it waits for the original's entry and is confirmed when it is applied,
 * or refused if the entry was not committed. The log is the test: it holds what the leader submits, and the test
 * applies or refuses it, as Raft would.
 */
class InFlightResendTest {
    private static final long PRODUCER = 0x5EED_0030L;

    @TempDir
    Path dir;

    private record Submitted(PublishFrame frame, ProducerEpochs epochs) {
    }

    private final LinkedBlockingQueue<Submitted> log = new LinkedBlockingQueue<>();

    @Test
    void aResendOfAnUncommittedMessageWaitsForItsEntryInsteadOfBeingRefusedByTheQuota() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of())) {
            BrokerQueue queue = core.queues.declare("q", QueueSettings.builder()
                    .set(QueueSettings.QUOTA_HARD_MESSAGES, 5).set(QueueSettings.OVERFLOW_POLICY, QueueSettings.OVERFLOW_REJECT).build());
            FakeConnection producer = new FakeConnection("producer");
            admit(queue, producer, 1, 2, 3, 4);
            apply(queue, producer, nextSubmitted());
            assertEquals(Map.of(1L, "confirmed", 2L, "confirmed", 3L, "confirmed", 4L, "confirmed"), outcomes(producer, 4));

            admit(queue, producer, 5); // the fifth of five: admitted, submitted, not applied yet
            Submitted original = nextSubmitted();
            admit(queue, producer, 5); // its resend, the quota full with it
            admit(queue, producer, 6); // new: refused
            assertEquals(Map.of(1L, "confirmed", 2L, "confirmed", 3L, "confirmed", 4L, "confirmed", 6L, "QUEUE_BLOCKED"),
                    outcomes(producer, 5), "6 refused, and nothing yet for the resend of 5 (answered in order, it would come first)");
            assertEquals(0, log.size(), "the resend was not submitted again");

            apply(queue, producer, original);
            TestAwait.until("the original and its resend, both confirmed once the entry is applied",
                    () -> confirms(producer, 5) == 2);
            assertEquals(1, confirms(producer, 6) + refusals(producer, 6), "6 answered once");
            assertEquals(5, QueueCore.onLoop(queue, () -> queue.store().unackedMessages()), "stored once");
            TestAwait.until("the window of all seven messages back", () -> producer.publishCreditReturned() == 7);
            assertEquals(7, producer.heldBytesReturned(), "each gave back the byte it held (rule W2), the waiting resend too");
        }
    }

    @Test
    void aWaitingResendIsRefusedWhenItsOriginalsEntryIsNotCommitted() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of())) {
            BrokerQueue queue = core.queues.declare("q", QueueSettings.builder()
                    .set(QueueSettings.QUOTA_HARD_MESSAGES, 1).set(QueueSettings.OVERFLOW_POLICY, QueueSettings.OVERFLOW_REJECT).build());
            FakeConnection producer = new FakeConnection("producer");
            admit(queue, producer, 1);
            Submitted original = nextSubmitted();
            admit(queue, producer, 1); // the resend waits
            queue.uncommittedRefused(1, original.frame().messageBytes());
            original.frame().release();
            PublishErrorFrame refused = producer.await(PublishErrorFrame.class, 1, Duration.ofSeconds(30)).get(0);
            assertEquals(new IdRange(1, 1), refused.sequences());
            assertEquals(ErrorCode.QUEUE_BLOCKED.code(), refused.code(), refused.message());
            assertEquals(0, producer.all(ConfirmFrame.class).size(), "nothing stored, nothing confirmed");
            TestAwait.until("the refused resend's window back", () -> producer.publishCreditReturned() == 1);
            assertEquals(1, producer.heldBytesReturned(), "and the byte it held (rule W2)");
        }
    }

    private void admit(BrokerQueue queue, FakeConnection from, long... sequences) {
        PublishFrameBuilder builder = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, queue.name());
        for (long sequence : sequences) {
            builder.add(PRODUCER, sequence, List.of(), new byte[] {(byte) sequence});
        }
        queue.admit(from, builder.build(), Long.MAX_VALUE, (frame, epochs) -> log.add(new Submitted(frame, epochs)));
    }

    private Submitted nextSubmitted() throws InterruptedException {
        Submitted submitted = log.poll(30, TimeUnit.SECONDS);
        assertNotNull(submitted, "the leader submitted the frame");
        return submitted;
    }

    /** The log index of the next entry applied. */
    private long nextIndex = 1;

    /** The entry is committed and applied here, on the node that submitted it, at the log's next index. */
    private void apply(BrokerQueue queue, FakeConnection link, Submitted submitted) {
        queue.applyReplicated(link, submitted.frame(), true, submitted.epochs(), nextIndex++ << 16);
    }

    /** How many times {@code sequence} was confirmed. */
    private static long confirms(FakeConnection producer, long sequence) {
        return producer.all(ConfirmFrame.class).stream().flatMap(c -> c.sequences().stream())
                .filter(r -> r.from() <= sequence && sequence <= r.to()).count();
    }

    private static long refusals(FakeConnection producer, long sequence) {
        return producer.all(PublishErrorFrame.class).stream()
                .filter(e -> e.sequences().from() <= sequence && sequence <= e.sequences().to()).count();
    }

    /** Sequence to "confirmed" or its refusal's code, once {@code count} sequences are answered. */
    private static Map<Long, String> outcomes(FakeConnection producer, int count) throws InterruptedException {
        Map<Long, String> outcomes = new TreeMap<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (outcomes.size() < count && System.nanoTime() < deadline) {
            outcomes.clear();
            for (ConfirmFrame c : producer.all(ConfirmFrame.class)) {
                c.sequences().forEach(r -> {
                    for (long s = r.from(); s <= r.to(); s++) {
                        outcomes.put(s, "confirmed");
                    }
                });
            }
            for (PublishErrorFrame e : producer.all(PublishErrorFrame.class)) {
                for (long s = e.sequences().from(); s <= e.sequences().to(); s++) {
                    outcomes.put(s, ErrorCode.fromCode(e.code()).name());
                }
            }
            if (outcomes.size() < count) {
                producer.await(Object.class, producer.all(Object.class).size() + 1, Duration.ofSeconds(30));
            }
        }
        return outcomes;
    }
}
