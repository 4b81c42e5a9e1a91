package io.sluice.bench.storage;

import io.sluice.storage.DurabilityMode;
import io.sluice.storage.MessageStore;
import io.sluice.storage.StoreConfig;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Warmup;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * Settings every benchmark shares, the broker's too (they run on the same store): one fork with
 * Chronicle's JVM flags, short warm-up and measurement (the whole suite runs in a few minutes on 2
 * cores), throughput in operations per second. Data directories go under {@code sluice.bench.dir} (default: the system temp directory)
 * and are deleted after each trial or iteration.
 */
@Fork(value = 1, jvmArgsAppend = {
        "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
        "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
        "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED",
        "-Dchronicle.analytics.disable=true",
        "-Dchronicle.announcer.disable=true",
        "-Dchronicle.disk.monitor.disable=true",
        "-Xms2g", "-Xmx2g"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public abstract class StorageBenchmarkBase {
    /** Payload size the targets are stated for. */
    public static final int PAYLOAD_BYTES = 256;

    protected static Path newDataDirectory(String prefix) {
        try {
            Path parent = Path.of(System.getProperty("sluice.bench.dir", System.getProperty("java.io.tmpdir")));
            return Files.createTempDirectory(parent, "sluice-bench-" + prefix + "-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static MessageStore openStore(Path directory, DurabilityMode durability) {
        return MessageStore.open(directory, StoreConfig.builder().durability(durability).build());
    }

    protected static byte[] payload() {
        byte[] payload = new byte[PAYLOAD_BYTES];
        for (int i = 0; i < payload.length; i++) {
            payload[i] = (byte) ('a' + i % 26);
        }
        return payload;
    }

}
