package io.sluice.bench.storage;

import io.sluice.storage.DurabilityMode;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import java.nio.ByteBuffer;
import java.nio.file.Path;

/**
 * Single-thread append of 256-byte messages. {@code never}: raw append throughput. {@code always}:
 * the producer keeps at most {@value #IN_FLIGHT} appends not yet durable; before append
 * <i>n</i> it waits until append <i>n</i> − {@value #IN_FLIGHT} is durable, so the flusher's group
 * commit sees batches of up to that many. A fresh store per iteration keeps disk use bounded.
 */
@State(Scope.Benchmark)
public class StorageAppendBenchmark extends StorageBenchmarkBase {
    static final int IN_FLIGHT = 1000;

    @Param({"never", "always"})
    public String durability;

    private Path directory;
    private MessageStore store;
    private QueueStore queue;
    private final ByteBuffer payload = ByteBuffer.wrap(payload());
    private final long[] inFlight = new long[IN_FLIGHT];
    private long appended;

    @Setup(Level.Iteration)
    public void open() {
        directory = newDataDirectory("append");
        store = openStore(directory, DurabilityMode.parse(durability));
        queue = store.createQueue("bench");
        appended = 0;
    }

    @TearDown(Level.Iteration)
    public void close() {
        store.close();
        io.sluice.storage.Directories.deleteRecursively(directory);
    }

    @Benchmark
    public long append() {
        if (queue.durability() == DurabilityMode.NEVER) {
            return queue.append(1, appended++, null, payload);
        }
        int slot = (int) (appended % IN_FLIGHT);
        if (appended >= IN_FLIGHT) {
            long oldest = inFlight[slot];
            if (queue.durableIndex() < oldest) {
                queue.whenDurable(oldest).join();
            }
        }
        long id = queue.append(1, appended++, null, payload);
        inFlight[slot] = id;
        return id;
    }
}
