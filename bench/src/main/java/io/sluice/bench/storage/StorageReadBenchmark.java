package io.sluice.bench.storage;

import io.sluice.storage.DurabilityMode;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueReader;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoredMessage;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import java.nio.ByteBuffer;
import java.nio.file.Path;

/**
 * Sequential {@link QueueReader#next()} over a pre-filled queue of {@value #MESSAGES} unacknowledged
 * 256-byte messages (about 300 MiB, in the page cache after the fill). At the end the reader is
 * closed and a new one starts from the oldest message again; that costs one seek per
 * {@value #MESSAGES} reads.
 */
@State(Scope.Benchmark)
public class StorageReadBenchmark extends StorageBenchmarkBase {
    static final int MESSAGES = 1_000_000;

    private Path directory;
    private MessageStore store;
    private QueueStore queue;
    private QueueReader reader;

    @Setup(Level.Trial)
    public void fill() {
        directory = newDataDirectory("read");
        store = openStore(directory, DurabilityMode.NEVER);
        queue = store.createQueue("bench");
        ByteBuffer payload = ByteBuffer.wrap(payload());
        for (int i = 0; i < MESSAGES; i++) {
            queue.append(1, i, null, payload);
        }
        reader = queue.openReader();
    }

    @TearDown(Level.Trial)
    public void close() {
        reader.close();
        store.close();
        io.sluice.storage.Directories.deleteRecursively(directory);
    }

    @Benchmark
    public long next() {
        StoredMessage message = reader.next();
        if (message == null) {
            reader.close();
            reader = queue.openReader();
            message = reader.next();
        }
        return message.id() + message.payloadLength();
    }
}
