package io.sluice.broker.queue;

import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.PublishErrorFrame;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A PUBLISH frame whose messages are refused for one reason is answered by one PUBLISH_ERROR per run of a producer's
 * consecutive sequences, not one per message: a full frame into a queue at its hard quota made as many PUBLISH_ERROR
 * frames as it had messages, each with its sentence, about a dozen times the bytes the client had sent.
 */
class RefusalRangesTest {
    @TempDir
    Path dir;

    @Test
    void aFrameRefusedByTheQuotaIsAnsweredWithOneRangePerProducersRun() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("full", QueueSettings.builder().quotaMessages(0, 1).overflowPolicy("reject").build());
            FakeConnection producer = new FakeConnection("producer");
            core.publish(q, producer, 7, 0, new byte[] {0}); // the queue is at its hard quota from here on
            core.publish(q, producer, 7, 1, oneByteEach(200));
            List<PublishErrorFrame> refused = refusals(producer, 200);
            assertEquals(1, refused.size(), "one frame for the run; the first: " + refused.get(0));
            assertEquals(new IdRange(1, 200), refused.get(0).sequences());
            assertEquals(7, refused.get(0).producerId());
            assertEquals(ErrorCode.QUEUE_BLOCKED, refused.get(0).errorCode());
            assertEquals(1L, (long) QueueCore.onLoop(q, q.store()::unackedMessages));
            assertEquals(200L, (long) QueueCore.onLoop(q, q::publishRefused), "each message counted");
        }
    }

    /** The same for a superseded instance of a named producer: its sentence names no sequence, the range does. */
    @Test
    void aFrameOfAFencedProducerIsAnsweredWithOneRange() throws Exception {
        long named = 0x5EED_0001L;
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.EMPTY);
            FakeConnection zombie = new FakeConnection("zombie");
            FakeConnection newest = new FakeConnection("newest");
            q.producerState().register(zombie, named, -1).get(10, TimeUnit.SECONDS);
            q.producerState().register(newest, named, -1).get(10, TimeUnit.SECONDS);
            core.publish(q, zombie, named, 1, oneByteEach(50));
            List<PublishErrorFrame> refused = refusals(zombie, 50);
            assertEquals(ErrorCode.PRODUCER_FENCED, refused.get(0).errorCode());
            assertEquals(1, refused.size(), "one frame for the fenced run; the first: " + refused.get(0));
            assertEquals(new IdRange(1, 50), refused.get(0).sequences());
        }
    }

    /**
     * The same for sequences a publish window or more below the producer's highest stored: their sentence named each
     * sequence, so a frame of resends from too far back was answered one PUBLISH_ERROR per message (from a review). It
     * names the window and the highest stored now; the range carries the sequences.
     */
    @Test
    void aFrameOfSequencesOutOfTheWindowIsAnsweredWithOneRange() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never", "broker.publish-window-messages", "100"))) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.EMPTY);
            FakeConnection producer = new FakeConnection("producer");
            core.publish(q, producer, 7, 500, new byte[] {0});
            core.publish(q, producer, 7, 1, oneByteEach(50));
            List<PublishErrorFrame> refused = refusals(producer, 50);
            assertEquals(ErrorCode.SEQUENCE_OUT_OF_WINDOW, refused.get(0).errorCode());
            assertEquals(1, refused.size(), "one frame for the run; the first: " + refused.get(0));
            assertEquals(new IdRange(1, 50), refused.get(0).sequences());
            String sentence = refused.get(0).message();
            assertTrue(sentence.contains("100") && sentence.contains("(500)") && sentence.contains("producer 7"), sentence);
            assertEquals(1L, (long) QueueCore.onLoop(q, q.store()::unackedMessages));
        }
    }

    private static byte[][] oneByteEach(int messages) {
        byte[][] payloads = new byte[messages][];
        for (int i = 0; i < messages; i++) {
            payloads[i] = new byte[] {(byte) i};
        }
        return payloads;
    }

    /** The PUBLISH_ERROR frames {@code producer} got once they name {@code messages} sequences together. */
    private static List<PublishErrorFrame> refusals(FakeConnection producer, int messages) throws InterruptedException {
        return producer.await(PublishErrorFrame.class,
                list -> list.stream().mapToLong(f -> f.sequences().to() - f.sequences().from() + 1).sum() == messages,
                Duration.ofSeconds(30), messages + " publishes refused");
    }
}
