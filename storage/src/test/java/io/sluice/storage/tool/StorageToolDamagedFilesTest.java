package io.sluice.storage.tool;

import io.sluice.storage.DurabilityMode;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.ack.AckFiles;
import io.sluice.storage.segment.SegmentFiles;
import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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

    /** What a run logs at WARN or above (the tool's log goes to its stderr): each as its level, logger and message. */
    private static List<String> warnings(Runnable run) {
        Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        ListAppender<ILoggingEvent> logged = new ListAppender<>();
        logged.start();
        root.addAppender(logged);
        try {
            run.run();
        } finally {
            root.detachAppender(logged);
        }
        return logged.list.stream().filter(e -> e.getLevel().isGreaterOrEqual(Level.WARN))
                .map(e -> e.getLevel() + " " + e.getLoggerName() + " " + e.getFormattedMessage()
                        + (e.getThrowableProxy() == null ? "" : " " + e.getThrowableProxy().getClassName())).toList();
    }

    private static Outcome run(String... args) {
        return Outcome.of(args);
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

    private Path segmentFile(int segment) {
        return queue("orders").resolve("segments").resolve(SegmentFiles.fileName(segment));
    }

    /** The messages of {@code segment}: all unacknowledged but in segment 0, whose first ACKED_PREFIX are. */
    private long unacknowledgedIn(int segment) {
        return ids.stream().filter(id -> id >>> 32 == segment).count() - (segment == 0 ? ACKED_PREFIX : 0);
    }

    private static void overwriteFirstHeader(Path file, int word) throws IOException {
        byte[] bytes = Files.readAllBytes(file);
        ByteBuffer.wrap(bytes).order(java.nio.ByteOrder.LITTLE_ENDIAN).putInt(0, word);
        Files.write(file, bytes);
    }

    /**
     * A later segment replaced by random bytes: verify noted "Chronicle's index counts -1 records ... a broker appending
     * during the run", and a segment 0 "without its end marker", said CLEAN, and took over a minute (Chronicle waits out
     * its timeout at every look at a header never completed). Its messages are lost: damage, naming the file, and the
     * segments around it are still read.
     */
    @Test
    void aLaterSegmentOfRandomBytesIsDamageNamingTheFile() throws IOException {
        Path file = segmentFile(1);
        byte[] garbage = new byte[(int) Files.size(file)];
        new Random(42).nextBytes(garbage);
        Files.write(file, garbage);

        Outcome r = run("verify", dir.toString());
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out() + r.err());
        assertTrue(Pattern.compile("\n  DAMAGE segment 1: " + Pattern.quote(file.toString()) + " (is damaged in its header \\([^)]*\\)|has no"
                + " complete first header \\([^)]*\\), though later segments follow): none of its records can be read, and the ack"
                + " state counts "
                + unacknowledgedIn(1) + " unacknowledged messages in it; a broker refuses to open the queue\n").matcher(r.out()).find(),
                r.out());
        assertTrue(r.out().contains("\n  0        19700101-000000.cq4         2621440       3404       2404        0\n"), r.out());
        assertTrue(r.out().contains("\n  2        19700101-000002.cq4         2621440        692        692        0\n"), r.out());
        assertFalse(r.out().contains("NOTE"), r.out());
        assertTrue(r.out().contains("Result: DAMAGED (1 of 2 queue(s))"), r.out());
    }

    /** A sealed segment whose first header is zeros, its records intact after it: Chronicle cannot find them. */
    @Test
    void aLaterSegmentWithoutItsFirstHeaderIsDamageAndDumpSkipsItSayingSo() throws IOException {
        Path file = segmentFile(1);
        overwriteFirstHeader(file, 0);
        String damage = "DAMAGE segment 1: " + file + " has no complete first header (its first 4 bytes are 0x00000000, where"
                + " Chronicle's first header belongs), though later segments follow: none of its records can be read, and the"
                + " ack state counts " + unacknowledgedIn(1) + " unacknowledged messages in it; a broker refuses to open the"
                + " queue\n";

        Outcome r = run("verify", dir.toString());
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().contains("\n  " + damage), r.out());

        r = run("dump", dir.toString(), "orders", "--from", "0/3403", "--limit", "2");
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out() + r.err());
        String[] lines = r.out().split("\n");
        assertEquals(damage.strip(), lines[2], r.out());
        assertTrue(lines[3].startsWith("0x0000000000000d4b 0/3403 "), r.out());
        assertTrue(lines[4].startsWith("0x0000000200000000 2/0 "), r.out());
    }

    /**
     * The last segment as a machine crash leaves one Chronicle was creating: its blocks there, its first header not (zeros).
     * It holds no message, and the broker deletes it at its next start: noted, and the queue CLEAN.
     */
    @Test
    void aLastSegmentOfZerosIsNotedAsNeverCompleted() throws IOException {
        Path file = segmentFile(3);
        Files.write(file, new byte[(int) Files.size(segmentFile(2))]);

        Outcome r = run("verify", dir.toString());
        assertEquals(StorageTool.EXIT_CLEAN, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().contains("\n  NOTE segment 3: " + file + " has no complete first header (its first 4 bytes are"
                + " 0x00000000, where Chronicle's first header belongs): it holds no records (a file a broker was creating"
                + " during the run, or one a crash left during its creation, which the broker deletes at its next start)\n"),
                r.out());
        assertTrue(r.out().contains(MESSAGES + " message(s), " + (MESSAGES - ACKED_PREFIX) + " unacked, 0 corrupt"), r.out());

        r = run("dump", dir.toString(), "orders", "--from", "2/691");
        assertEquals(StorageTool.EXIT_CLEAN, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().endsWith("1 record(s) printed\n"), r.out());
    }

    /**
     * The last segment with zeros where its first header was, while the ack state counts its messages unacknowledged:
     * the broker refuses the queue (rule "an emptied segment is not deleted"), so this is damage, not the note above.
     */
    @Test
    void aLastSegmentWithoutItsFirstHeaderHoldingUnacknowledgedMessagesIsDamage() throws IOException {
        Path file = segmentFile(2);
        overwriteFirstHeader(file, 0);

        Outcome r = run("verify", dir.toString());
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().contains("\n  DAMAGE segment 2: " + file + " has no complete first header (its first 4 bytes are"
                + " 0x00000000, where Chronicle's first header belongs): none of its records can be read, and the ack state"
                + " counts " + unacknowledgedIn(2) + " unacknowledged messages in it; a broker refuses to open the queue\n"),
                r.out());
        assertFalse(r.out().contains("NOTE"), r.out());
    }

    private Path metadataFile() {
        return queue("orders").resolve("segments").resolve("metadata.cq4t");
    }

    /**
     * Chronicle's metadata file replaced by text: verify said CLEAN, and Chronicle logged its fallback to a metadata of
     * its own with a stack trace; a broker's open waits 20 s and fails with "Unable to claim exclusive lock". Damage now,
     * naming the file, nothing logged, and the segments are still read.
     */
    @Test
    void aMetadataFileOfTextIsDamageNamingItAndTheSegmentsAreStillRead() throws IOException {
        Path metadata = metadataFile();
        Files.writeString(metadata, "garbage\n");
        String damage = "DAMAGE Chronicle's metadata file " + metadata + " is damaged in its header (unexpected magic 0x62726167"
                + " where Chronicle's first header belongs): a broker refuses to open the queue; the file holds no message"
                + " (Chronicle's locks and its list of the segment files), and moved out of the segment directory it is made"
                + " again at the next start\n";

        Outcome[] r = new Outcome[1];
        assertEquals(List.of(), warnings(() -> r[0] = run("verify", dir.toString())));
        assertEquals(StorageTool.EXIT_DAMAGED, r[0].exitCode(), r[0].out() + r[0].err());
        assertTrue(r[0].out().contains("\n  " + damage), r[0].out());
        assertTrue(r[0].out().contains(MESSAGES + " message(s), " + (MESSAGES - ACKED_PREFIX) + " unacked, 0 corrupt"), r[0].out());

        assertEquals(List.of(), warnings(() -> r[0] = run("dump", dir.toString(), "orders", "--limit", "1")));
        assertEquals(StorageTool.EXIT_DAMAGED, r[0].exitCode(), r[0].out() + r[0].err());
        String[] lines = r[0].out().split("\n");
        assertEquals(damage.strip(), lines[2], r[0].out());
        assertTrue(lines[3].startsWith("0x0000000000000000 0/0 acked "), r[0].out());
    }

    /** Random bytes: verify said "queue cannot be read: ... Unable to claim exclusive shared lock", after 10 s, naming no damage. */
    @Test
    void aMetadataFileOfRandomBytesIsDamageNamingIt() throws IOException {
        Path metadata = metadataFile();
        byte[] garbage = new byte[(int) Files.size(metadata)];
        new Random(7).nextBytes(garbage);
        Files.write(metadata, garbage);

        Outcome r = run("verify", dir.toString());
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out() + r.err());
        assertTrue(Pattern.compile("\n  DAMAGE Chronicle's metadata file " + Pattern.quote(metadata.toString())
                + " (is damaged in its header|has no complete first header) \\([^)]*\\): a broker refuses to open the queue;")
                .matcher(r.out()).find(), r.out());
        assertTrue(r.out().contains(MESSAGES + " message(s), " + (MESSAGES - ACKED_PREFIX) + " unacked, 0 corrupt"), r.out());
    }

    /** A directory in its place was "IllegalArgumentException: Tables should be configured with the table file" of segments/. */
    @Test
    void aMetadataFileThatIsADirectoryIsDamageNamingIt() throws IOException {
        Path metadata = metadataFile();
        Files.delete(metadata);
        Files.createDirectory(metadata);

        Outcome r = run("verify", dir.toString());
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().contains("\n  DAMAGE Chronicle's metadata file " + metadata + " is not a regular file: a broker"
                + " refuses to open the queue\n"), r.out());
        assertTrue(r.out().contains(MESSAGES + " message(s), " + (MESSAGES - ACKED_PREFIX) + " unacked, 0 corrupt"), r.out());
    }

    /** Gone: the broker makes a new one, so it is only noted; Chronicle logged its fallback as a warning on stderr. */
    @Test
    void aMissingMetadataFileIsNotedWithNothingLogged() throws IOException {
        Path metadata = metadataFile();
        Files.delete(metadata);

        Outcome[] r = new Outcome[1];
        assertEquals(List.of(), warnings(() -> r[0] = run("verify", dir.toString())));
        assertEquals(StorageTool.EXIT_CLEAN, r[0].exitCode(), r[0].out() + r[0].err());
        assertTrue(r[0].out().contains("\n  NOTE Chronicle's metadata file " + metadata + " is missing: the broker makes a new"
                + " one at its next start\n"), r[0].out());
        assertTrue(r[0].out().contains(MESSAGES + " message(s), " + (MESSAGES - ACKED_PREFIX) + " unacked, 0 corrupt"), r[0].out());
        assertFalse(Files.exists(metadata), "the tool writes nothing into the data directory");
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
