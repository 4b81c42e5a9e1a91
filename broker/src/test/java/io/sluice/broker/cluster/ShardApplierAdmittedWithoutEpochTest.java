package io.sluice.broker.cluster;

import io.netty.buffer.ByteBufAllocator;
import io.sluice.broker.queue.ProducerEpochs;
import io.sluice.protocol.ProducerIds;
import io.sluice.protocol.ProducerInitFrame;
import io.sluice.protocol.PublishFrame;
import io.sluice.protocol.PublishFrameBuilder;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

/**
 * Rule R11 of docs/replication.md on a node that kept its epoch marks, applying what a leader decided: a producer the
 * leader admitted without an epoch ({@link ProducerEpochs#ADMITTED_WITHOUT_EPOCH}: its table lost its marks, so it could
 * not tell the name from an unnamed producer) is stored here too, though this node's table holds the name's epoch, and
 * that epoch stays: a later publish under the name from no registered connection, which a leader fences (-1), is fenced
 * here as well. Below entry level 8 the leader leaves such producers out of the entry, as it did before.
 */
class ShardApplierAdmittedWithoutEpochTest extends ShardApplierFixture {
    private static final long NAMED = ProducerIds.forName("order-service");

    private static byte[] publish(long call, int sequence, ProducerEpochs epochs) {
        PublishFrameBuilder builder = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, "orders");
        builder.add(NAMED, sequence, List.of(), ("order-service:" + sequence).getBytes(StandardCharsets.UTF_8));
        PublishFrame frame = builder.build();
        try {
            return ShardEntry.encode(OTHER_NODE, call, "orders", frame, epochs, MAX_FRAME);
        } finally {
            frame.release();
        }
    }

    private static ProducerEpochs named(int epoch) {
        return new ProducerEpochs(new long[] {NAMED}, new int[] {epoch});
    }

    @Test
    void aProducerTheLeaderAdmittedWithoutAnEpochIsStoredHereAndItsEpochStays() {
        ShardApplier applier = applier(EntryLevels.SUPPORTED);
        applier.applyLogEntry(declare(1), 1).join();
        applier.applyLogEntry(ShardEntry.encode(OTHER_NODE, 2, "orders",
                new ProducerInitFrame(0, "orders", "order-service", ProducerInitFrame.NEW_INSTANCE), MAX_FRAME), 2).join();
        applier.applyLogEntry(publish(3, 1, named(1)), 3).join(); // the registered instance, epoch 1

        applier.applyLogEntry(publish(4, 5, named(ProducerEpochs.ADMITTED_WITHOUT_EPOCH)), 4).join();
        applier.applyLogEntry(publish(5, 6, named(-1)), 5).join();
        applier.applyLogEntry(publish(6, 7, ProducerEpochs.NONE), 6).join(); // a leader before level 8: epoch 0, fenced by the table
        applier.applyLogEntry(publish(7, 8, named(1)), 7).join(); // the registered instance again: its epoch is still 1

        // Each apply completes once the queue's thread ran its work (ShardApplier.afterQueueWork).
        assertEquals(List.of("order-service:1", "order-service:5", "order-service:8"), stored(queues.get("orders")));
    }

    @Test
    void belowLevelEightTheProducersAdmittedWithoutAnEpochAreLeftOut() {
        ProducerEpochs epochs = new ProducerEpochs(new long[] {1, 2, 3}, new int[] {ProducerEpochs.ADMITTED_WITHOUT_EPOCH, -1, 4});
        assertEquals(new ProducerEpochs(new long[] {2, 3}, new int[] {-1, 4}), epochs.withoutAdmittedWithoutEpoch());
        assertSame(ProducerEpochs.NONE, named(ProducerEpochs.ADMITTED_WITHOUT_EPOCH).withoutAdmittedWithoutEpoch());
        ProducerEpochs kept = named(2);
        assertSame(kept, kept.withoutAdmittedWithoutEpoch());
        assertEquals(8, ShardEntry.ADMITTED_WITHOUT_EPOCH_LEVEL);
        assertEquals(ShardEntry.ADMITTED_WITHOUT_EPOCH_LEVEL, EntryLevels.NEWEST, "the newest level allows it");
    }
}
