package io.sluice.bench.storage;

import io.sluice.storage.DurabilityMode;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueReader;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.StoredMessage;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * The latency of one append while reclaim runs, against the same without it (the target:
 * reclaim running concurrently costs appends at most 2x at p99). With {@code reclaim=on} a second
 * thread reads every message and acknowledges it, so 1 MiB segments fill, are sealed and deleted
 * (and the odd straggler relocated) while the benchmark thread appends; with {@code off} the same
 * reader runs but never acknowledges, so nothing is ever reclaimed. Durability {@code never}, so the
 * figure is the append path itself, not the disk. Read the p0.99 of the sample-time output.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class ReclaimInterferenceBenchmark extends StorageBenchmarkBase {
    @Param({"off", "on"})
    public String reclaim;

    private Path directory;
    private MessageStore store;
    private QueueStore queue;
    private Thread consumer;
    private volatile boolean running;
    private final ByteBuffer payload = ByteBuffer.wrap(payload());
    private long appended;

    @Setup(Level.Iteration)
    public void open() {
        directory = newDataDirectory("reclaim");
        store = MessageStore.open(directory, StoreConfig.builder()
                .durability(DurabilityMode.NEVER)
                .segmentBytes(StoreConfig.MIN_SEGMENT_BYTES)
                .maxMessageBytes(64 << 10)
                .build());
        queue = store.createQueue("bench");
        boolean acking = reclaim.equals("on");
        running = true;
        consumer = new Thread(() -> {
            try (QueueReader reader = queue.openReader()) {
                while (running) {
                    StoredMessage m = reader.next();
                    if (m == null) {
                        Thread.onSpinWait();
                    } else if (acking) {
                        queue.ack(m.id());
                    }
                }
            }
        }, "bench-consumer");
        consumer.start();
    }

    @TearDown(Level.Iteration)
    public void close() throws InterruptedException {
        running = false;
        consumer.join();
        store.close();
        io.sluice.storage.Directories.deleteRecursively(directory);
    }

    @Benchmark
    public long append() {
        return queue.append(1, appended++, null, payload);
    }
}
