package io.sluice.bench.storage;

import io.sluice.storage.DurabilityMode;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.SplittableRandom;

/**
 * Single acks ({@link QueueStore#ack(long)}, journaled) of {@value #BATCH} freshly appended
 * messages per invocation, in append order or shuffled (seeded). Appending the batch is
 * per-invocation set-up and not timed; the score is acks per second. Fully acknowledged segments
 * are reclaimed by the store's flusher meanwhile, as in production.
 */
@State(Scope.Benchmark)
public class AckBenchmark extends StorageBenchmarkBase {
    static final int BATCH = 100_000;

    @Param({"inOrder", "shuffled"})
    public String order;

    private Path directory;
    private MessageStore store;
    private QueueStore queue;
    private final long[] ids = new long[BATCH];
    private final ByteBuffer payload = ByteBuffer.wrap(payload());
    private final SplittableRandom random = new SplittableRandom(42);
    private long appended;

    @Setup(Level.Trial)
    public void open() {
        directory = newDataDirectory("ack");
        store = openStore(directory, DurabilityMode.NEVER);
        queue = store.createQueue("bench");
    }

    @TearDown(Level.Trial)
    public void close() {
        store.close();
        io.sluice.storage.Directories.deleteRecursively(directory);
    }

    @Setup(Level.Invocation)
    public void appendBatch() {
        for (int i = 0; i < BATCH; i++) {
            ids[i] = queue.append(1, appended++, null, payload);
        }
        if (order.equals("shuffled")) {
            for (int i = BATCH - 1; i > 0; i--) {
                int j = random.nextInt(i + 1);
                long t = ids[i];
                ids[i] = ids[j];
                ids[j] = t;
            }
        }
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public int ackBatch() {
        int newly = 0;
        for (long id : ids) {
            newly += queue.ack(id).ordinal();
        }
        return newly;
    }
}
