package io.sluice.broker.cluster;

import io.netty.buffer.ByteBufAllocator;
import io.sluice.protocol.PublishFrame;
import io.sluice.protocol.PublishFrameBuilder;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Rule R4 of docs/replication.md: a node that restarts replays the log after its last marker into stores that may hold
 * those entries already, and the producer table is what makes that harmless; so a cluster node forgets a producer only
 * once a marker covers its last entry. Found by a review: a node down longer than {@code queues.dedup-idle-expiry-ms}
 * (an hour by default) expired every producer at its start, and one that had evicted producers beyond
 * {@code queues.dedup-max-producers}, stored their replayed publishes a second time.
 */
class ShardApplierReplayTest extends ShardApplierFixture {
    private static final long IDLE_EXPIRY_MILLIS = TimeUnit.HOURS.toMillis(1);

    @Override
    Map<String, String> settings() {
        return Map.of("queues.dedup-max-producers", "1");
    }

    private ShardApplier applier;

    @BeforeEach
    void open() {
        applier = applier(EntryLevels.SUPPORTED);
    }

    @Test
    void aNodeDownLongerThanTheIdleExpiryStoresItsReplayedPublishesOnce() {
        applier.applyLogEntry(declare(1), 10).join();
        applier.applyLogEntry(publish(2, 7, 1, 3), 11).join();

        clockOffsetMillis.addAndGet(2 * IDLE_EXPIRY_MILLIS);
        reopenQueues();
        applier = applier(EntryLevels.SUPPORTED);
        applier.applyLogEntry(declare(1), 10).join(); // no marker was written: the log is replayed from its start
        applier.applyLogEntry(publish(2, 7, 1, 3), 11).join();

        assertEquals(List.of("7:1", "7:2", "7:3"), stored(queues.get("orders")));
    }

    @Test
    void producersBeyondTheCapAreNotForgottenBeforeAMarkerCoversThem() {
        applier.applyLogEntry(declare(1), 10).join();
        applier.applyLogEntry(publish(2, 7, 1, 2), 11).join();
        applier.applyLogEntry(publish(3, 8, 1, 2), 12).join(); // a second producer, over the cap of one

        reopenQueues();
        applier = applier(EntryLevels.SUPPORTED);
        applier.applyLogEntry(declare(1), 10).join();
        applier.applyLogEntry(publish(2, 7, 1, 2), 11).join();
        applier.applyLogEntry(publish(3, 8, 1, 2), 12).join();

        assertEquals(List.of("7:1", "7:2", "8:1", "8:2"), stored(queues.get("orders")));
    }

    @Test
    void producersAreForgottenOnceAMarkerCoversThemAsOnASingleBroker() {
        applier.applyLogEntry(declare(1), 10).join();
        applier.applyLogEntry(publish(2, 7, 1, 2), 11).join();
        queues.appliedEntriesMarked().join();
        applier.applyLogEntry(publish(3, 8, 1, 1), 12).join(); // over the cap: 7, covered by the marker, is evicted
        applier.applyLogEntry(publish(4, 7, 1, 1), 13).join(); // so a resend of 7's first is stored again

        clockOffsetMillis.addAndGet(2 * IDLE_EXPIRY_MILLIS);
        queues.appliedEntriesMarked().join();
        applier.applyLogEntry(publish(5, 9, 1, 1), 14).join(); // 7 and 8, idle past the expiry and covered, expire
        applier.applyLogEntry(publish(6, 8, 1, 1), 15).join();

        assertEquals(List.of("7:1", "7:2", "8:1", "7:1", "9:1", "8:1"), stored(queues.get("orders")));
    }

    @Test
    void pastTwiceTheCapTheLeastRecentlySeenIsEvictedEvenBeforeAMarker() {
        applier.applyLogEntry(declare(1), 10).join();
        applier.applyLogEntry(publish(2, 7, 1, 1), 11).join();
        applier.applyLogEntry(publish(3, 8, 1, 1), 12).join(); // held: two producers, twice the cap
        applier.applyLogEntry(publish(4, 9, 1, 1), 13).join(); // evicts 7 regardless
        applier.applyLogEntry(publish(5, 8, 1, 1), 14).join(); // still held: a duplicate
        applier.applyLogEntry(publish(6, 7, 1, 1), 15).join(); // forgotten: stored again

        assertEquals(List.of("7:1", "8:1", "9:1", "7:1"), stored(queues.get("orders")));
    }

    /**
     * The restart is exact (R4a): past twice the cap the table evicts producers before a marker, and the table rebuilt from
     * the records at a restart evicts them again; the entries the queue holds are still not applied twice, since each
     * record says which log entry it came from. Twice: the second start reads the positions from the producer checkpoint
     * the first wrote. On main each replay stored all three again, each producer evicting the next one replayed.
     */
    @Test
    void aNodePastTwiceTheCapStoresItsReplayedPublishesOnce() {
        applier.applyLogEntry(declare(1), 10).join();
        applier.applyLogEntry(publish(2, 7, 1, 1), 11).join();
        applier.applyLogEntry(publish(3, 8, 1, 1), 12).join();
        applier.applyLogEntry(publish(4, 9, 1, 1), 13).join(); // evicts 7 before any marker

        for (int restart = 0; restart < 2; restart++) {
            reopenQueues(); // killed before the next marker: the log is replayed from its start
            applier = applier(EntryLevels.SUPPORTED);
            for (long index = 10; index <= 13; index++) {
                applier.applyLogEntry(index == 10 ? declare(1) : publish(index - 9, (int) index - 4, 1, 1), index).join();
            }
            assertEquals(List.of("7:1", "8:1", "9:1"), stored(queues.get("orders")), "after restart " + (restart + 1));
        }
        applier.applyLogEntry(publish(5, 10, 1, 1), 14).join(); // the next entry is applied as before
        assertEquals(List.of("7:1", "8:1", "9:1", "10:1"), stored(queues.get("orders")));
    }

    /**
     * A node killed in the middle of an entry's appends holds the first part of it: the replay stores the rest, and
     * nothing of the first part again, though the rebuilt table evicted a producer of that part (7). On main the whole
     * first part was stored a second time.
     */
    @Test
    void anEntryStoredInPartBeforeACrashIsCompletedOnceOnReplay() {
        applier.applyLogEntry(declare(1), 10).join();
        // What the node had stored of entry 11 when it was killed: its first three messages of five.
        applier.applyLogEntry(publishOfProducers(2, 7, 8, 9), 11).join();

        reopenQueues();
        applier = applier(EntryLevels.SUPPORTED);
        applier.applyLogEntry(declare(1), 10).join();
        applier.applyLogEntry(publishOfProducers(2, 7, 8, 9, 10, 11), 11).join();

        assertEquals(List.of("7:1", "8:1", "9:1", "10:1", "11:1"), stored(queues.get("orders")));
    }

    /** A PUBLISH to "orders" of sequence 1 of each of {@code producers}, in that order. */
    private static byte[] publishOfProducers(long call, int... producers) {
        PublishFrameBuilder builder = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, "orders");
        for (int producer : producers) {
            builder.add(producer, 1, List.of(), (producer + ":1").getBytes(StandardCharsets.UTF_8));
        }
        PublishFrame frame = builder.build();
        try {
            return ShardEntry.encode(OTHER_NODE, call, "orders", frame, MAX_FRAME);
        } finally {
            frame.release();
        }
    }
}
