package io.sluice.broker.queue;

import io.netty.buffer.ByteBufAllocator;
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
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * Rule R2 of docs/replication.md: a message's size is the leader's check, before it submits a PUBLISH, since every node
 * stores a committed message whatever its own {@code storage.max-message-bytes}. A frame holding a message above the
 * leader's limit is refused whole (an entry is stored whole or not at all) and nothing is submitted.
 */
class LeaderMessageSizeTest {
    private static final long PRODUCER = 0x5EED_0040L;

    @TempDir
    Path dir;

    private final LinkedBlockingQueue<PublishFrame> log = new LinkedBlockingQueue<>();

    @Test
    void aFrameHoldingAMessageAboveTheLeadersMaxMessageBytesIsRefusedWholeAndNotSubmitted() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.max-message-bytes", "1024"))) {
            BrokerQueue queue = core.queues.declare("q", QueueSettings.EMPTY);
            FakeConnection producer = new FakeConnection("producer");
            admit(queue, producer, new byte[10], new byte[1025]);
            List<PublishErrorFrame> refused = producer.await(PublishErrorFrame.class, 1, Duration.ofSeconds(30));
            assertEquals(new IdRange(1, 2), refused.get(0).sequences());
            assertEquals(ErrorCode.MESSAGE_TOO_LARGE.code(), refused.get(0).code());
            assertEquals("message of 1025 bytes (headers plus payload) for queue 'q' exceeds the limit of 1024 bytes (storage.max-message-bytes); a cluster stores "
                    + "a PUBLISH frame whole or not at all, so its 2 messages are refused", refused.get(0).message());

            admit(queue, producer, new byte[1024]); // at the limit: admitted
            PublishFrame submitted = log.poll(30, TimeUnit.SECONDS);
            assertNotNull(submitted, "the frame at the limit was submitted");
            assertEquals(1, submitted.messageCount());
            submitted.release();
            assertEquals(0, log.size(), "the refused frame was never submitted");
        }
    }

    private void admit(BrokerQueue queue, FakeConnection from, byte[]... payloads) {
        PublishFrameBuilder builder = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, queue.name());
        for (int i = 0; i < payloads.length; i++) {
            builder.add(PRODUCER, i + 1, List.of(), payloads[i]);
        }
        queue.admit(from, builder.build(), Long.MAX_VALUE, (frame, epochs) -> log.add(frame));
    }
}
