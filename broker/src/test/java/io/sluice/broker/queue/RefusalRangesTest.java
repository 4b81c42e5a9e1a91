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
            byte[][] payloads = new byte[200][];
            for (int i = 0; i < payloads.length; i++) {
                payloads[i] = new byte[] {(byte) i};
            }
            core.publish(q, producer, 7, 1, payloads);
            List<PublishErrorFrame> refused = producer.await(PublishErrorFrame.class,
                    list -> list.stream().mapToLong(f -> f.sequences().to() - f.sequences().from() + 1).sum() == 200,
                    Duration.ofSeconds(30), "200 publishes refused");
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
            byte[][] payloads = new byte[50][];
            for (int i = 0; i < payloads.length; i++) {
                payloads[i] = new byte[] {(byte) i};
            }
            core.publish(q, zombie, named, 1, payloads);
            List<PublishErrorFrame> refused = zombie.await(PublishErrorFrame.class,
                    list -> list.stream().mapToLong(f -> f.sequences().to() - f.sequences().from() + 1).sum() == 50,
                    Duration.ofSeconds(30), "50 publishes refused");
            assertEquals(ErrorCode.PRODUCER_FENCED, refused.get(0).errorCode());
            assertEquals(1, refused.size(), "one frame for the fenced run; the first: " + refused.get(0));
            assertEquals(new IdRange(1, 50), refused.get(0).sequences());
        }
    }
}
