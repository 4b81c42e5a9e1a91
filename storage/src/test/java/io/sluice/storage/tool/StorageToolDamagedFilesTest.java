package io.sluice.storage.tool;

import io.sluice.storage.DurabilityMode;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.ack.AckFiles;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What verify and dump say of a queue whose files are not what the broker writes: the file or directory named, as
 * damage (exit 1), where they said CLEAN or named nothing.
 */
class StorageToolDamagedFilesTest {
    /** Three segments of 1 MiB: about 3,400 records of 256 bytes each. */
    private static final int MESSAGES = 7_500;
    private static final int ACKED_PREFIX = 1_000;

    @TempDir
    Path dir;
    private final List<Long> ids = new ArrayList<>();

    private record Outcome(int exitCode, String out, String err) {
    }

    private static Outcome run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = StorageTool.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Outcome(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private static StoreConfig config() {
        return StoreConfig.builder().durability(DurabilityMode.NEVER).segmentBytes(StoreConfig.MIN_SEGMENT_BYTES)
                .maxMessageBytes(64 << 10).build();
    }

    @BeforeEach
    void createStore() {
        try (MessageStore store = MessageStore.open(dir, config())) {
            QueueStore orders = store.createQueue("orders");
            for (int i = 0; i < MESSAGES; i++) {
                ids.add(orders.append(7, i, null, ByteBuffer.wrap(new byte[256])));
            }
            orders.ackRange(ids.get(0), ids.get(ACKED_PREFIX - 1));
            store.createQueue("empty");
        }
        assertEquals(2, ids.get(MESSAGES - 1) >>> 32, "the messages fill segments 0, 1 and 2");
    }

    private Path queue(String name) {
        return dir.resolve("queues").resolve(name);
    }

    /** A queue whose segments/ is a regular file: none of its segments can be read, and a broker refuses the queue. */
    @Test
    void aSegmentsPathThatIsNotADirectoryIsDamage() throws IOException {
        Path segments = queue("empty").resolve("segments");
        Files.delete(segments);
        Files.writeString(segments, "not a directory\n");

        Outcome r = run("verify", dir.toString());
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().contains("  DAMAGE " + segments + " is not a directory: the queue's segments cannot be read, and a"
                + " broker refuses to open the queue\n"), r.out());
        assertTrue(r.out().contains("Result: DAMAGED (1 of 2 queue(s))"), r.out());

        r = run("dump", dir.toString(), "empty");
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().contains("\nDAMAGE " + segments + " is not a directory: the queue's segments cannot be read"), r.out());
    }

    /** A queue whose acks/ is a regular file: verify said "ack checkpoint: none" and CLEAN; a broker refuses the queue. */
    @Test
    void anAcksPathThatIsNotADirectoryIsDamage() throws IOException {
        Path acks = queue("orders").resolve("acks");
        io.sluice.storage.Directories.deleteRecursively(acks);
        Files.writeString(acks, "not a directory\n");

        Outcome r = run("verify", dir.toString());
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().contains("  DAMAGE ack state: " + acks + " is not a directory: the queue's ack state cannot be read,"
                + " and a broker refuses to open the queue\n"), r.out());

        r = run("dump", dir.toString(), "orders", "--limit", "1");
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().contains("Ack state: DAMAGED: " + acks + " is not a directory"), r.out());
    }

    /** An ack file that is a directory was reported as "queue cannot be read: IOException: Is a directory", naming nothing. */
    @Test
    void anAckCheckpointThatIsADirectoryIsNamed() throws IOException {
        assertAckFileThatIsADirectoryIsNamed(AckFiles.CHECKPOINT);
    }

    @Test
    void anAckJournalThatIsADirectoryIsNamed() throws IOException {
        assertAckFileThatIsADirectoryIsNamed(AckFiles.JOURNAL);
    }

    private void assertAckFileThatIsADirectoryIsNamed(String name) throws IOException {
        Path file = queue("orders").resolve("acks").resolve(name);
        Files.delete(file);
        Files.createDirectory(file);

        Outcome r = run("verify", dir.toString());
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().contains("  DAMAGE ack state: ack state file " + file + " is not a regular file: the queue's ack"
                + " state cannot be read, and a broker refuses to open the queue\n"), r.out());
    }
}
