package io.sluice.bench.storage;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.TimeUnit;

/**
 * The floor under {@code durability=always}: one 4 KiB write into a preallocated 64 MiB file
 * followed by {@code FileChannel.force(false)} (fdatasync, what the flusher calls on a segment).
 * Sample mode, so the report carries the median and tail percentiles.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class FsyncBenchmark extends StorageBenchmarkBase {
    private static final int FILE_BYTES = 64 << 20;
    private static final int BLOCK_BYTES = 4096;

    private Path directory;
    private FileChannel channel;
    private final ByteBuffer block = ByteBuffer.allocateDirect(BLOCK_BYTES);
    private long position;

    @Setup(Level.Trial)
    public void open() throws IOException {
        directory = newDataDirectory("fsync");
        channel = FileChannel.open(directory.resolve("fsync.dat"), StandardOpenOption.CREATE_NEW,
                StandardOpenOption.READ, StandardOpenOption.WRITE);
        ByteBuffer zeros = ByteBuffer.allocateDirect(1 << 20);
        for (long p = 0; p < FILE_BYTES; p += zeros.capacity()) {
            zeros.clear();
            channel.write(zeros, p);
        }
        channel.force(true);
    }

    @TearDown(Level.Trial)
    public void close() throws IOException {
        channel.close();
        io.sluice.storage.Directories.deleteRecursively(directory);
    }

    @Benchmark
    public long writeAndForce() throws IOException {
        block.clear();
        block.putLong(0, position);
        channel.write(block, position);
        channel.force(false);
        position = (position + BLOCK_BYTES) % FILE_BYTES;
        return position;
    }
}
