package io.sluice.broker.queue;

import io.sluice.broker.error.BrokerException;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.dedup.ProducerCheckpoint;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rule "lost marks refuse no resume" (ProducerRegistry.checkGranted) on both paths that admit a registration: a single
 * broker's, and a cluster leader's before it submits the registration to the log (rule R11 of docs/replication.md),
 * which used to refuse the resume with PRODUCER_FENCED before any node saw it; and where it does not apply, a queue
 * declared again after its delete, which knows every epoch it granted.
 */
class QueueProducerStateLostMarksTest {
    private static final long NAMED = 7;

    @TempDir
    Path dir;

    @Test
    void aResumeOfAnEpochAboveTheMarksOfADamagedCheckpointIsAdmittedAndRegistered() throws Exception {
        Path queueDirectory;
        try (QueueCore core = new QueueCore(dir, Map.of())) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.EMPTY);
            FakeConnection instance = new FakeConnection("instance");
            for (int epoch = 1; epoch <= 3; epoch++) {
                assertEquals(epoch, q.producerState().register(instance, NAMED, -1).get(10, TimeUnit.SECONDS).epoch());
            }
            queueDirectory = q.store().directory();
        }
        Files.writeString(ProducerCheckpoint.file(queueDirectory), "damaged");

        try (QueueCore core = new QueueCore(dir, Map.of())) {
            BrokerQueue q = core.queues.get("q");
            AtomicBoolean submitted = new AtomicBoolean();
            q.producerState().admitRegistration(NAMED, 3, () -> submitted.set(true)).get(10, TimeUnit.SECONDS);
            assertTrue(submitted.get(), "a cluster leader submits the resume");
            assertEquals(3, q.producerState().register(new FakeConnection("resumed"), NAMED, 3).get(10, TimeUnit.SECONDS)
                    .epoch(), "and a single broker registers it");
        }
    }

    /**
     * A queue deleted and declared again is a new queue, whose table has seen every epoch it granted: it can tell that
     * it never granted the epoch an instance of the deleted one resumes with, and refuses it (docs/protocol.md).
     */
    @Test
    void aQueueDeclaredAgainAfterItsDeleteRefusesAnEpochOnlyTheDeletedOneGranted() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of())) {
            BrokerQueue deleted = core.queues.declare("q", QueueSettings.EMPTY);
            FakeConnection instance = new FakeConnection("instance");
            for (int epoch = 1; epoch <= 3; epoch++) {
                assertEquals(epoch, deleted.producerState().register(instance, NAMED, -1).get(10, TimeUnit.SECONDS).epoch());
            }
            assertTrue(core.queues.delete("q"));

            BrokerQueue q = core.queues.declare("q", QueueSettings.EMPTY);
            ExecutionException refused = assertThrows(ExecutionException.class,
                    () -> q.producerState().register(instance, NAMED, 3).get(10, TimeUnit.SECONDS));
            assertEquals(ErrorCode.PRODUCER_FENCED, ((BrokerException) refused.getCause()).code(), refused.getMessage());
            assertEquals(1, q.producerState().register(instance, NAMED, -1).get(10, TimeUnit.SECONDS).epoch(),
                    "a new instance registers");
        }
    }
}
