package io.sluice.broker.queue;

import io.sluice.protocol.QueueSettings;
import io.sluice.storage.QueueStore;
import io.sluice.storage.durability.FileForcer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A purge is answered once its acks are on disk: before, it was answered as soon as they were in the ack journal's
 * mapping, and a machine crash within the sync interval brought every purged message back after the client had been
 * told they were gone (found by a review). The interval here is a minute, so only a force the purge asks for can
 * make its acks durable before the answer.
 */
class PurgeDurableTest {
    private static final int STORED = 5;

    @TempDir
    Path dir;

    @Test
    void aPurgeIsAnsweredOnlyAfterAForceOfTheAckJournalThatHoldsIt() throws Exception {
        AtomicReference<QueueStore> watched = new AtomicReference<>();
        // The unacknowledged count when each force of the watched queue's journal begins: that force holds every ack made before.
        List<Long> unackedAtJournalForces = new CopyOnWriteArrayList<>();
        FileForcer forcer = new FileForcer() {
            @Override
            public void force(FileChannel channel, Path file) throws java.io.IOException {
                channel.force(false);
            }

            @Override
            public void forcingMapped(Path file) {
                QueueStore store = watched.get();
                if (store != null && file.startsWith(store.directory())) {
                    unackedAtJournalForces.add(store.unackedMessages());
                }
            }
        };
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never", "storage.sync-interval-ms", "60000"), forcer)) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.EMPTY);
            FakeConnection producer = new FakeConnection("producer");
            for (int i = 0; i < STORED; i++) {
                core.publish(q, producer, 1, i, new byte[] {1});
            }
            QueueCore.awaitOnLoop(q, q.store()::unackedMessages, (long) STORED);
            watched.set(q.store());

            assertEquals(STORED, (long) q.purge().get(30, TimeUnit.SECONDS));
            assertTrue(unackedAtJournalForces.contains(0L),
                    "the purge was answered before a force of the ack journal held its acks; forces saw " + unackedAtJournalForces);
        }
    }
}
