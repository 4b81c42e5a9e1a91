package io.sluice.broker.cluster;

import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.DefaultEventLoopGroup;
import io.netty.channel.EventLoopGroup;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.config.ConfigLoader;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.QueueManager;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.PublishFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.MessageStore;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** A batch of entries ({@link EntryBatch}) is applied entry by entry, as the same entries one per log entry are (rule R2). */
class ShardApplierBatchTest {
    private static final int MAX_FRAME = 1 << 20;
    private static final int OTHER_NODE = 2;

    @TempDir
    Path dir;
    private final EventLoopGroup loop = new DefaultEventLoopGroup(1);
    private final BrokerConfig config = new ConfigLoader().load(null, Map.of());
    private MessageStore store;
    private QueueManager queues;
    private ShardApplier applier;

    @BeforeEach
    void open() {
        store = MessageStore.open(dir.resolve("node"), config.storeConfig());
        queues = new QueueManager(store, loop, config.queues, 1000);
        applier = new ShardApplier(queues, new Submissions(), 1, MAX_FRAME);
    }

    @AfterEach
    void close() {
        queues.close();
        store.close();
        loop.shutdownGracefully(0, 0, TimeUnit.SECONDS).syncUninterruptibly();
    }

    private static byte[] publish(long call, int producer, int fromSequence, int toSequence) {
        PublishFrameBuilder builder = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, "orders");
        for (int sequence = fromSequence; sequence <= toSequence; sequence++) {
            builder.add(producer, sequence, List.of(), (producer + ":" + sequence).getBytes(StandardCharsets.UTF_8));
        }
        PublishFrame frame = builder.build();
        try {
            return ShardEntry.encode(OTHER_NODE, call, "orders", frame, MAX_FRAME);
        } finally {
            frame.release();
        }
    }

    /** The stored messages' payloads, in id order. */
    private List<String> stored(BrokerQueue queue) {
        List<String> payloads = new ArrayList<>();
        queue.store().forEachRecordAfter(-1, (id, codec) -> payloads.add(
                new String(codec.array(), codec.payloadOffset(), codec.payloadLength(), StandardCharsets.UTF_8)));
        return payloads;
    }

    @Test
    void shouldApplyABatchInOrderDeduplicatingAResendInsideIt() {
        byte[] declare = ShardEntry.encode(OTHER_NODE, 1, "orders", new DeclareQueueFrame(0, "orders", QueueSettings.EMPTY), MAX_FRAME);
        byte[] batch = EntryBatch.encode(List.of(
                declare,
                publish(2, 7, 1, 3),
                publish(3, 8, 1, 2),
                publish(4, 7, 2, 5),     // a resend of 7's 2 and 3 with new ones after them
                publish(5, 8, 3, 3)));
        applier.applyLogEntry(batch, 10).join();
        BrokerQueue queue = queues.get("orders");
        assertEquals(List.of("7:1", "7:2", "7:3", "8:1", "8:2", "7:4", "7:5", "8:3"), stored(queue));
    }

    @Test
    void shouldSkipAnEntryItCannotReadAndApplyTheRestOfTheBatch() {
        byte[] declare = ShardEntry.encode(OTHER_NODE, 1, "orders", new DeclareQueueFrame(0, "orders", QueueSettings.EMPTY), MAX_FRAME);
        byte[] damaged = publish(3, 8, 1, 2);
        damaged = java.util.Arrays.copyOf(damaged, damaged.length - 3);
        applier.applyLogEntry(EntryBatch.encode(List.of(declare, publish(2, 7, 1, 2), damaged, publish(4, 7, 3, 3))), 10).join();
        assertEquals(List.of("7:1", "7:2", "7:3"), stored(queues.get("orders")));
    }
}
