package io.sluice.broker.queue;

import io.sluice.broker.TestAwait;
import io.sluice.broker.error.BrokerException;
import io.sluice.broker.log.RateLimitedLog;
import io.sluice.protocol.ErrorCode;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.dedup.ProducerCheckpoint;
import io.sluice.storage.dedup.ProducerTable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ProducerRegistryTest {
    @TempDir
    Path dir;
    private MessageStore store;
    private QueueStore queue;

    @BeforeEach
    void open() {
        store = MessageStore.open(dir, StoreConfig.builder().reservedDiskBytes(64L << 20).build());
        queue = store.createQueue("q");
    }

    @AfterEach
    void close() {
        store.close();
    }

    /**
     * A registry whose queue thread and writer are the caller's: every step has run when a call returns. A failed
     * checkpoint's retry is never run: the test asks for every checkpoint ({@link ProducerCheckpointRetryTest} for the retry).
     */
    private ProducerRegistry registry() {
        return ProducerRegistry.open("q", queue, new ProducerTable(10, 60_000, 100), Runnable::run, Runnable::run, NO_RETRY,
                true, RateLimitedLog.standard("producer checkpoints"));
    }

    static final CheckpointRetry.Timer NO_RETRY = (task, delayMillis) -> { };

    @Test
    void aCheckpointFollowsEveryFiftyThousandRecordsWithinASegment() throws Exception {
        ProducerRegistry registry = registry();
        FakeConnection connection = new FakeConnection("c");
        long id = -1;
        // The first record moves into segment 0 and takes a checkpoint; the rule takes the next.
        for (long s = 1; s <= ProducerRegistry.CHECKPOINT_EVERY_RECORDS + 1; s++) {
            id = queue.append(7, s, ByteBuffer.allocate(0), ByteBuffer.allocate(8));
            registry.stored(connection, 7, s, id, 0);
        }
        long expected = id;
        assertEquals(0, expected >>> 32, "all in the first segment: no roll took the checkpoint");
        TestAwait.until("a checkpoint through record " + expected, Duration.ofSeconds(10),
                () -> ProducerCheckpoint.coveredThrough(queue.directory()) == expected);
    }

    /**
     * A producer checkpoint that does not read (here, text) is set aside with an error naming it, and the table rebuilt
     * from the stored records alone; the checkpoint the open takes then replaces it. The broker starts either way.
     */
    @Test
    void aCheckpointThatDoesNotReadIsSetAsideAndTheTableRebuiltFromTheStoredRecords() throws Exception {
        for (long s = 1; s <= 3; s++) {
            queue.append(7, s, ByteBuffer.allocate(0), ByteBuffer.allocate(8));
        }
        Path checkpoint = ProducerCheckpoint.file(queue.directory());
        Files.writeString(checkpoint, "not a producer checkpoint");
        ProducerTable table = new ProducerTable(10, 60_000, 100);
        ProducerRegistry.open("q", queue, table, Runnable::run, Runnable::run, NO_RETRY, true,
                RateLimitedLog.standard("producer checkpoints"));
        assertEquals(3, table.lastStoredSequence(7), "rebuilt from the stored records");
        TestAwait.until("a checkpoint that reads replaces the damaged one", Duration.ofSeconds(10), () -> {
            try {
                ProducerCheckpoint.Loaded loaded = ProducerCheckpoint.read(queue.directory());
                return loaded != null && loaded.producers().size() == 1;
            } catch (IOException e) {
                return false;
            }
        });
    }

    /**
     * Rule "lost marks refuse no resume": a damaged checkpoint is set aside and the table rebuilt from the stored records,
     * which carry no epochs, so the queue no longer knows which epochs it granted. A resume of an epoch above what it
     * has left is accepted, raising the marks, and fences older epochs from then on; the table keeps that its marks were
     * lost across a restart, when its checkpoint reads again. Refused as never granted, the producer's instance was
     * ended for good (the client takes PRODUCER_FENCED as final), as was every named producer of the queue, after the
     * restart as well.
     */
    @Test
    void aNamedProducerResumesItsEpochAfterItsQueuesCheckpointWasSetAsideAsDamaged() throws Exception {
        ProducerRegistry first = registry();
        FakeConnection before = new FakeConnection("before");
        for (int epoch = 1; epoch <= 3; epoch++) {
            assertEquals(epoch, first.register(before, 7, -1).get(10, TimeUnit.SECONDS).epoch());
        }
        assertEquals(4, first.register(new FakeConnection("other"), 8, -1).get(10, TimeUnit.SECONDS).epoch());
        long id = queue.append(7, 1, ByteBuffer.allocate(0), ByteBuffer.allocate(8));
        first.stored(before, 7, 1, id, 0);
        first.checkpoint().get(10, TimeUnit.SECONDS); // written before the damage, not over it
        Files.writeString(ProducerCheckpoint.file(queue.directory()), "damaged");

        ProducerRegistry reopened = registry();
        assertEquals(new ProducerRegistry.Registered(3, 1, 3),
                reopened.register(new FakeConnection("after"), 7, 3).get(10, TimeUnit.SECONDS),
                "the instance holding epoch 3 resumes, its last stored sequence read back from the records");
        assertEquals(-1, reopened.register(new FakeConnection("older"), 7, 2).get(10, TimeUnit.SECONDS).epoch(),
                "an older epoch of the producer is fenced from then on");

        ProducerRegistry restarted = registry(); // the checkpoint reads now: it says the marks were lost
        assertEquals(4, restarted.register(new FakeConnection("other again"), 8, 4).get(10, TimeUnit.SECONDS).epoch(),
                "the other producer resumes its epoch after the restart too");
        assertEquals(5, restarted.register(new FakeConnection("new"), 9, -1).get(10, TimeUnit.SECONDS).epoch(),
                "a new instance is above every epoch resumed");
    }

    /**
     * A queue's first record takes a checkpoint, as every registration does: one holding records and no checkpoint lost
     * it (removed from outside), its epoch marks with it, and accepts a resume above them. A new queue, with neither,
     * granted nothing yet, and refuses one.
     */
    @Test
    void aQueueWithRecordsAndNoCheckpointLostItsEpochMarksAndANewOneDidNot() throws Exception {
        queue.append(7, 1, ByteBuffer.allocate(0), ByteBuffer.allocate(8));
        assertEquals(3, registry().register(new FakeConnection("c"), 7, 3).get(10, TimeUnit.SECONDS).epoch());

        QueueStore empty = store.createQueue("new");
        ProducerRegistry fresh = ProducerRegistry.open("new", empty, new ProducerTable(10, 60_000, 100), Runnable::run,
                Runnable::run, NO_RETRY, true, RateLimitedLog.standard("producer checkpoints"));
        BrokerException refused = assertThrows(BrokerException.class, () -> fresh.register(new FakeConnection("c"), 7, 3));
        assertEquals(ErrorCode.PRODUCER_FENCED, refused.code());
    }

    @Test
    void aRegistrationWhoseCheckpointFailedFencesNobodyAndIsNotKept() throws Exception {
        ProducerRegistry registry = registry();
        FakeConnection first = new FakeConnection("first");
        FakeConnection second = new FakeConnection("second");
        assertEquals(1, registry.register(first, 7, -1).get(10, TimeUnit.SECONDS).epoch());

        // A directory that is not empty where the checkpoint's temporary file goes: the write fails.
        Path blocker = queue.directory().resolve(ProducerCheckpoint.FILE + ".tmp");
        Files.createDirectories(blocker.resolve("blocker"));
        assertThrows(ExecutionException.class, () -> registry.register(second, 7, -1).get(10, TimeUnit.SECONDS));
        assertEquals(1, registry.table().epoch(7), "epoch 2 was never granted");
        assertEquals(ProducerTable.Verdict.NEW, registry.check(first, 7, 1, 0), "the instance of epoch 1 is not fenced");
        assertEquals(ProducerTable.Verdict.FENCED, registry.check(second, 7, 1, 0), "the failed one holds nothing");

        Files.delete(blocker.resolve("blocker"));
        Files.delete(blocker);
        assertEquals(2, registry.register(second, 7, -1).get(10, TimeUnit.SECONDS).epoch(),
                "the next grant is the epoch the failed one would have had");
        assertEquals(ProducerTable.Verdict.FENCED, registry.check(first, 7, 1, 0));
    }

    @Test
    void registrationsWhileACheckpointIsWrittenShareTheNextOne() throws Exception {
        // The queue's thread is this one, and the broker's one writer thread is held: both run their tasks by hand.
        ArrayDeque<Runnable> queueTasks = new ArrayDeque<>();
        ArrayDeque<Runnable> writerTasks = new ArrayDeque<>();
        int[] submitted = new int[1];
        ProducerRegistry registry = ProducerRegistry.open("q", queue, new ProducerTable(10_000, 60_000, 100), queueTasks::add,
                task -> {
                    submitted[0]++;
                    writerTasks.add(task);
                }, NO_RETRY, true, RateLimitedLog.standard("producer checkpoints"));
        runAll(queueTasks, writerTasks); // the open's own checkpoint, if it took one
        int before = submitted[0];
        List<CompletableFuture<ProducerRegistry.Registered>> answers = new ArrayList<>();
        for (int i = 0; i < 3_000; i++) {
            answers.add(registry.register(new FakeConnection("c" + i), 1_000 + i, -1)); // a client's pipelined PRODUCER_INITs
        }
        assertEquals(1, submitted[0] - before, "the first registration's checkpoint is in flight; the others wait for the next");
        assertTrue(!answers.get(0).isDone(), "nothing is answered before its checkpoint is written");
        writerTasks.poll().run();
        runAll(queueTasks, new ArrayDeque<>());
        assertTrue(answers.get(0).isDone(), "the first is answered once its checkpoint is written");
        assertEquals(2, submitted[0] - before, "one checkpoint, taken then, for the 2,999 registrations made meanwhile");
        runAll(queueTasks, writerTasks);
        for (int i = 0; i < answers.size(); i++) {
            assertTrue(answers.get(i).get(1, TimeUnit.SECONDS).epoch() >= 1, "registration " + i + " is granted an epoch");
        }
        assertEquals(2, submitted[0] - before, "no write more");
    }

    @Test
    void namedProducersOnOpenConnectionsAreBoundedByTwiceTheTablesCap() throws Exception {
        ProducerRegistry registry = registry(); // the table tracks 10
        FakeConnection connection = new FakeConnection("one");
        for (long id = 1; id <= 20; id++) {
            assertTrue(registry.register(connection, id, -1).get(10, TimeUnit.SECONDS).epoch() >= 1, "producer " + id);
        }
        NamedProducersExhaustedException e = assertThrows(NamedProducersExhaustedException.class,
                () -> registry.register(connection, 21, -1));
        assertTrue(e.getMessage().contains("at most 20"), e.getMessage());
        assertTrue(registry.register(connection, 20, -1).get(10, TimeUnit.SECONDS).epoch() >= 1,
                "a new instance of a name already kept is not a new owner");
        registry.connectionClosed(connection);
        assertTrue(registry.register(new FakeConnection("two"), 21, -1).get(10, TimeUnit.SECONDS).epoch() >= 1,
                "the closed connection's owners are gone");
    }

    @Test
    void ownersOnConnectionsNoLongerActiveDoNotCountAgainstTheBound() throws Exception {
        ProducerRegistry registry = registry(); // the table tracks 10: 20 owners at most
        FakeConnection closed = new FakeConnection("closed");
        for (long id = 1; id <= 20; id++) {
            registry.register(closed, id, -1).get(10, TimeUnit.SECONDS);
        }
        closed.close(); // inactive, its connectionClosed not run (yet)
        assertTrue(registry.register(new FakeConnection("open"), 21, -1).get(10, TimeUnit.SECONDS).epoch() >= 1,
                "the inactive connection's owners do not count");
    }

    @Test
    void aReplicatedRegistrationIsNeitherCappedNorOwnedWithoutASubmitterAndIsAppliedOnce() throws Exception {
        ProducerRegistry registry = registry(); // 20 owners at most
        for (long id = 1; id <= 30; id++) { // rule R11: the leader checked the cap; applying the log never refuses
            assertEquals((int) id, registry.registerReplicated(null, id, -1, id << 16).get(10, TimeUnit.SECONDS).epoch());
        }
        FakeConnection client = new FakeConnection("client");
        for (long id = 31; id <= 50; id++) {
            registry.checkOwnerRoom(id); // no owner was kept for the 30 registered for nobody
            registry.registerReplicated(client, id, -1, id << 16).get(10, TimeUnit.SECONDS);
        }
        assertThrows(NamedProducersExhaustedException.class, () -> registry.checkOwnerRoom(51), "20 owners on an open connection");
        assertEquals(50, registry.registerReplicated(null, 50, -1, 50L << 16).get(10, TimeUnit.SECONDS).epoch(),
                "a replay at a position applied changes nothing (R4)");
        assertEquals(50, registry.table().highestEpochGranted());
    }

    /** Runs the queue's and the writer's tasks, and those they make, until neither has any. */
    private static void runAll(ArrayDeque<Runnable> queueTasks, ArrayDeque<Runnable> writerTasks) {
        while (!queueTasks.isEmpty() || !writerTasks.isEmpty()) {
            Runnable next = queueTasks.isEmpty() ? writerTasks.poll() : queueTasks.poll();
            next.run();
        }
    }
}
