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

/**
 * Rules R4 and R11 of docs/replication.md: a PRODUCER_INIT entry replayed after a restart must change nothing. A new
 * instance's registration (epoch -1) grants "one above every epoch granted"; replayed on a table restored from the
 * registration's own checkpoint, it grants one more than the other nodes granted, and the leader's later PUBLISH
 * entries, which carry the epoch the other nodes granted, are fenced on the restarted node alone.
 */
class ShardApplierNamedProducerReplayTest extends ShardApplierFixture {
    private static final String NAME = "order-service";
    private static final long PRODUCER = ProducerIds.forName(NAME);

    private static byte[] newInstance(long call) {
        return ShardEntry.encode(OTHER_NODE, call, "orders",
                new ProducerInitFrame(0, "orders", NAME, ProducerInitFrame.NEW_INSTANCE), MAX_FRAME);
    }

    /** A PUBLISH of the named producer, as the leader admitted it: holding the epoch its connection was granted (R11). */
    private static byte[] namedPublish(long call, int epoch, int fromSequence, int toSequence) {
        PublishFrameBuilder builder = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, "orders");
        for (int sequence = fromSequence; sequence <= toSequence; sequence++) {
            builder.add(PRODUCER, sequence, List.of(), ("named:" + sequence).getBytes(StandardCharsets.UTF_8));
        }
        PublishFrame frame = builder.build();
        try {
            return ShardEntry.encode(OTHER_NODE, call, "orders", frame,
                    new ProducerEpochs(new long[] {PRODUCER}, new int[] {epoch}), MAX_FRAME);
        } finally {
            frame.release();
        }
    }

    @Test
    void aReplayedRegistrationKeepsTheEpochEveryOtherNodeGranted() {
        ShardApplier applier = applier(EntryLevels.SUPPORTED);
        applier.applyLogEntry(declare(1), 10).join();
        applier.applyLogEntry(newInstance(2), 11).join(); // every node grants epoch 1
        applier.applyLogEntry(namedPublish(3, 1, 1, 2), 12).join();

        reopenQueues(); // a restart with no marker: the log is replayed from its start
        applier = applier(EntryLevels.SUPPORTED);
        applier.applyLogEntry(declare(1), 10).join();
        applier.applyLogEntry(newInstance(2), 11).join();
        applier.applyLogEntry(namedPublish(3, 1, 1, 2), 12).join();
        applier.applyLogEntry(namedPublish(4, 1, 3, 4), 13).join(); // new: every other node stores it

        assertEquals(List.of("named:1", "named:2", "named:3", "named:4"), stored(queues.get("orders")),
                "the restarted node must store what every other node stores");
    }
}
