package io.sluice.storage.tool;

import io.sluice.storage.ByteArrays;
import io.sluice.storage.DurabilityMode;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueIncarnation;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.ack.AckCheckpoint;
import io.sluice.storage.ack.AckFiles;
import io.sluice.storage.dedup.ProducerCheckpoint;
import io.sluice.storage.dedup.ProducerTable;
import io.sluice.storage.segment.RecordCodec;
import io.sluice.storage.segment.SegmentFiles;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class StorageToolTest {
    private static final int MESSAGES = 10_000;
    private static final int ACKED_PREFIX = 2_000; // below one segment (~3,400 records), so nothing is reclaimed

    @TempDir
    Path dir;
    private final List<Long> ids = new ArrayList<>();

    private static Outcome run(String... args) {
        return Outcome.of(args);
    }

    private static StoreConfig config() {
        return StoreConfig.builder().durability(DurabilityMode.NEVER).segmentBytes(StoreConfig.MIN_SEGMENT_BYTES)
                .maxMessageBytes(64 << 10).build();
    }

    /** 256-byte payloads starting with a unique marker, so a test can find a record's bytes in the file. */
    private static byte[] payload(int i) {
        byte[] p = new byte[256];
        Arrays.fill(p, (byte) '.');
        byte[] marker = marker(i);
        System.arraycopy(marker, 0, p, 0, marker.length);
        return p;
    }

    private static byte[] marker(int i) {
        return String.format("MSG-%06d", i).getBytes(StandardCharsets.US_ASCII);
    }

    private void fill(QueueStore q) {
        for (int i = 0; i < MESSAGES; i++) {
            ids.add(q.append(7, i, null, ByteBuffer.wrap(payload(i))));
        }
        q.ackRange(ids.get(0), ids.get(ACKED_PREFIX - 1));
        q.ack(ids.get(ACKED_PREFIX + 1));
        q.recordDelivery(ids.get(ACKED_PREFIX), 3);
    }

    @BeforeEach
    void createStore() {
        try (MessageStore store = MessageStore.open(dir, config())) {
            fill(store.createQueue("orders"));
            store.createQueue("empty");
        }
    }

    @Test
    void shouldReportCleanStoreWithFiguresAndExitZero() {
        Outcome r = run("verify", dir.toString());
        assertEquals(StorageTool.EXIT_CLEAN, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().contains("Queue 'orders'"), r.out());
        assertTrue(r.out().contains("Queue 'empty'"), r.out());
        long unacked = MESSAGES - ACKED_PREFIX - 1;
        assertTrue(r.out().contains(MESSAGES + " message(s), " + unacked + " unacked, 0 corrupt"), r.out());
        assertTrue(r.out().contains("ack checkpoint: generation"), r.out());
        assertTrue(r.out().contains(SegmentFiles.fileName(0)), r.out());
        assertTrue(r.out().contains("Result: CLEAN"), r.out());
    }

    @Test
    void shouldVerifyWhileTheStoreIsOpenWithoutChangingAckFiles() throws IOException {
        Path acks = dir.resolve("queues/orders/acks");
        try (MessageStore store = MessageStore.open(dir, config())) {
            QueueStore q = store.queue("orders");
            q.ack(ids.get(ACKED_PREFIX + 2));
            byte[] checkpoint = Files.readAllBytes(acks.resolve("acks.checkpoint"));
            byte[] journal = Files.readAllBytes(acks.resolve("acks.journal"));
            Outcome r = run("verify", dir.toString());
            assertEquals(StorageTool.EXIT_CLEAN, r.exitCode(), r.out() + r.err());
            assertTrue(r.out().contains(MESSAGES + " message(s), " + (MESSAGES - ACKED_PREFIX - 2) + " unacked"), r.out());
            assertTrue(Arrays.equals(checkpoint, Files.readAllBytes(acks.resolve("acks.checkpoint"))), "checkpoint changed");
            assertTrue(Arrays.equals(journal, Files.readAllBytes(acks.resolve("acks.journal"))), "journal changed");
            q.append(7, MESSAGES, null, ByteBuffer.wrap(payload(MESSAGES)));
        }
    }

    @Test
    void shouldNameFileAndIndexOfACorruptRecordAndExitOne() throws IOException {
        int victim = 5_000;
        long id = ids.get(victim);
        Path file = dir.resolve("queues/orders/segments").resolve(SegmentFiles.fileName((int) (id >>> 32)));
        byte[] bytes = Files.readAllBytes(file);
        int at = ByteArrays.indexOf(bytes, marker(victim));
        assertTrue(at > 0, "marker of message " + victim + " not found in " + file);
        bytes[at + 5] ^= 0x01;
        Files.write(file, bytes);

        Outcome r = run("verify", dir.toString());
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().contains("corrupt record in " + file + " index " + id), r.out());
        assertTrue(r.out().contains("checksum"), r.out());
        assertTrue(r.out().contains("Result: DAMAGED (1 of 2 queue(s))"), r.out());
    }

    /**
     * A segment file deleted by someone else while the ack state counts unacknowledged messages in it: a broker refuses
     * to open the queue (rule "a missing segment is not forgotten", docs/storage.md), so verify reports it as damage,
     * with the count, where it said CLEAN (the ack state's recovery forgets a segment without a file).
     */
    @Test
    void shouldReportAMissingSegmentHoldingUnacknowledgedMessagesAndExitOne() throws IOException {
        int first = (int) (ids.get(0) >>> 32);
        assertTrue(ids.get(MESSAGES - 1) >>> 32 > first, "the messages span segments");
        long inFirst = ids.stream().filter(id -> id >>> 32 == first).count();
        long unacked = inFirst - ACKED_PREFIX - 1; // the prefix and one more are acknowledged, all in the first segment
        Path file = dir.resolve("queues/orders/segments").resolve(SegmentFiles.fileName(first));
        Files.delete(file);

        Outcome r = run("verify", dir.toString());
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().contains(String.format("DAMAGE segment %d: %s is gone, and the ack state counts %d unacknowledged "
                + "messages in it", first, file, unacked)), r.out());
        assertTrue(r.out().contains("Result: DAMAGED (1 of 2 queue(s))"), r.out());
    }

    @Test
    void shouldNotReportAMissingSegmentWhoseMessagesWereAllAcknowledged() throws IOException {
        int first = (int) (ids.get(0) >>> 32);
        try (MessageStore store = MessageStore.open(dir, config())) {
            QueueStore q = store.queue("orders");
            long[] inFirst = ids.stream().filter(id -> id >>> 32 == first).mapToLong(Long::longValue).toArray();
            q.ackAll(inFirst, inFirst.length);
        }
        Path checkpoint = dir.resolve("queues/orders/acks").resolve(AckFiles.CHECKPOINT);
        assertEquals(0, AckCheckpoint.read(checkpoint).tracker().unackedCount(first), "the checkpoint knows it acknowledged");
        assertTrue(AckCheckpoint.read(checkpoint).tracker().messageCount(first) > 0, "and not reclaimed");
        Files.deleteIfExists(dir.resolve("queues/orders/segments").resolve(SegmentFiles.fileName(first)));

        Outcome r = run("verify", dir.toString());
        assertEquals(StorageTool.EXIT_CLEAN, r.exitCode(), r.out() + r.err());
    }

    /**
     * The last segment with zeros from a record on, where Chronicle's index still counts records (a file cut short that a
     * broker's mapping lengthened again with zeros, as the broker's refused open does): verify said CLEAN with a note
     * blaming "a broker appending during the run", although no record the index counts past the cut can be read and a
     * broker refuses to open the queue (rule "what the index counts is there", docs/storage.md).
     */
    @Test
    void shouldReportALastSegmentWhoseIndexedRecordsAreNotThereAndExitOne() throws IOException {
        int cutAt = 9_000;
        long id = ids.get(cutAt);
        long lastId = ids.get(MESSAGES - 1);
        Path file = dir.resolve("queues/orders/segments").resolve(SegmentFiles.fileName((int) (lastId >>> 32)));
        assertEquals(id >>> 32, lastId >>> 32, "the cut is in the last segment");
        byte[] bytes = Files.readAllBytes(file);
        int at = ByteArrays.indexOf(bytes, marker(cutAt)) - RecordCodec.HEADER_BYTES - 4; // the record's codec and Chronicle headers
        Arrays.fill(bytes, at, bytes.length, (byte) 0);
        Files.write(file, bytes);

        Outcome r = run("verify", dir.toString());
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().contains(String.format("DAMAGE segment %d: %s: Chronicle's index counts", lastId >>> 32, file))
                && Pattern.compile("the last of them, id 0x" + Long.toHexString(lastId >>> 32) + "[0-9a-f]{8}, is not in the file")
                .matcher(r.out()).find(), r.out()); // the index's count of a damaged file is its own, not the records appended
        assertTrue(r.out().contains("Result: DAMAGED (1 of 2 queue(s))"), r.out());
    }

    @Test
    void shouldReportCorruptAckCheckpointAndExitOne() throws IOException {
        Path checkpoint = dir.resolve("queues/orders/acks/acks.checkpoint");
        byte[] bytes = Files.readAllBytes(checkpoint);
        bytes[bytes.length - 1] ^= 0x40;
        Files.write(checkpoint, bytes);
        Outcome r = run("verify", dir.toString());
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().contains("DAMAGE ack state: ack state file " + checkpoint), r.out());
    }

    @Test
    void shouldDumpIdsAckedFlagsAndDeliveryCounts() {
        Outcome r = run("dump", dir.toString(), "orders", "--from", Long.toString(ids.get(ACKED_PREFIX - 1)), "--limit", "3");
        assertEquals(StorageTool.EXIT_CLEAN, r.exitCode(), r.out() + r.err());
        String[] lines = r.out().split("\\R");
        assertTrue(lines[1].startsWith("Ack state: " + (MESSAGES - ACKED_PREFIX - 1) + " unacked"), r.out());
        assertTrue(lines[2].startsWith(String.format("0x%016x %d/%d acked ", ids.get(ACKED_PREFIX - 1),
                ids.get(ACKED_PREFIX - 1) >>> 32, ids.get(ACKED_PREFIX - 1) & 0xFFFF_FFFFL)), lines[2]);
        assertTrue(lines[3].startsWith(String.format("0x%016x", ids.get(ACKED_PREFIX))), lines[3]);
        assertTrue(lines[3].contains(" unacked delivered 3 producer 7/" + ACKED_PREFIX + " headers 0 B payload 256 B \"MSG-002000"), lines[3]);
        assertTrue(lines[4].contains(" acked   delivered 0"), lines[4]);
        assertEquals("3 record(s) printed", lines[5]);
    }

    @Test
    void shouldDumpFromTheFirstRecordBySegmentAndSequence() {
        Outcome r = run("dump", dir.toString(), "orders", "--from", "0/0", "--limit", "1");
        assertEquals(StorageTool.EXIT_CLEAN, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().contains(String.format("0x%016x 0/0 acked", ids.get(0))), r.out());
    }

    @Test
    void shouldExitTwoNamingTheWrongArgument() {
        assertUsage(run(), "missing command");
        assertUsage(run("frobnicate"), "unknown command 'frobnicate'");
        assertUsage(run("verify"), "verify takes exactly one argument");
        assertUsage(run("verify", dir.resolve("nope").toString()), "data directory '" + dir.resolve("nope") + "' does not exist");
        assertUsage(run("dump", dir.toString()), "dump needs <dataDir> <queue>");
        assertUsage(run("dump", dir.toString(), "missing"), "queue 'missing' does not exist");
        assertUsage(run("dump", dir.toString(), "orders", "--limit", "-3"), "--limit '-3' is not a positive whole number");
        assertUsage(run("dump", dir.toString(), "orders", "--from", "zz"), "--from 'zz' is not a message id");
        assertUsage(run("dump", dir.toString(), "orders", "--frm", "1"), "unknown option '--frm'");
        assertUsage(run("dump", dir.toString(), "orders", "--limit"), "--limit needs a value");
    }

    /**
     * {@code bin/sluice verify --help} hands the tool {@code verify --help}: help after a command is a request for the usage,
     * on standard output with status 0, wherever it stands; it was taken for a data directory that does not exist (exit 2).
     */
    @Test
    void shouldPrintTheUsageAndExitZeroForHelpAfterACommand() {
        String[][] asked = {
                {"verify", "--help"}, {"verify", "-h"}, {"dump", "--help"}, {"dump", dir.toString(), "--help"},
                {"dump", dir.toString(), "orders", "--help"}, {"dump", dir.toString(), "orders", "--limit", "3", "-h"}};
        for (String[] args : asked) {
            Outcome r = run(args);
            assertEquals(StorageTool.EXIT_CLEAN, r.exitCode(), String.join(" ", args) + ": " + r.out() + r.err());
            assertEquals(StorageTool.USAGE + System.lineSeparator(), r.out(), String.join(" ", args));
            assertEquals("", r.err(), String.join(" ", args));
        }
    }

    /** Long.parseLong took "+3"; --limit took "--from" as its value. Decimal is digits alone, a value is no flag. */
    @Test
    void shouldRefuseASignedNumberAndAFlagWhereAValueBelongs() {
        assertUsage(run("dump", dir.toString(), "orders", "--limit", "+3"), "--limit '+3' is not a positive whole number");
        assertUsage(run("dump", dir.toString(), "orders", "--from", "+5"), "--from '+5' is not a message id");
        assertUsage(run("dump", dir.toString(), "orders", "--from", "0x+5"), "--from '0x+5' is not a message id");
        assertUsage(run("dump", dir.toString(), "orders", "--from", "+1/5"), "--from '+1/5' is not a message id");
        assertUsage(run("dump", dir.toString(), "orders", "--limit", "--from", "5"),
                "--limit needs a value; the argument after it, --from, is a flag");
    }

    /**
     * Exit 141 says "the reader closed the pipe" (rule T1); a stream the caller gives cannot tell that from a
     * full disk (a {@link PrintStream} keeps only a flag), so its failure is reported as one, with status 1.
     */
    @Test
    void shouldExitOneSayingSoWhenTheReportCannotBeWrittenToTheStreamGiven() {
        OutputStream fullDisk = new OutputStream() {
            @Override
            public void write(int b) throws IOException {
                throw new IOException("No space left on device");
            }
        };
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = StorageTool.run(new String[] {"dump", dir.toString(), "orders"}, new PrintStream(fullDisk, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        String said = err.toString(StandardCharsets.UTF_8);
        assertEquals(StorageTool.EXIT_DAMAGED, code, "not 141: nothing says a reader closed a pipe; stderr: " + said);
        assertTrue(said.startsWith("error: cannot write the report"), said);
    }

    /**
     * A segment file listed but gone when verify reads its size (a broker beside it reclaimed the segment) is left out
     * with a note; before, the run stopped there with {@code error: cannot list ...} and no other queue was verified.
     * A dangling link under a segment's name stands in for the race: listed, and no file when its size is read.
     */
    @Test
    void shouldNoteASegmentRemovedDuringTheRunAndGoOnToTheNextQueue() throws IOException {
        Path segments = dir.resolve("queues/empty/segments"); // "empty" is verified first
        Files.createDirectories(segments);
        Path gone = segments.resolve(SegmentFiles.fileName(3));
        Files.createSymbolicLink(gone, segments.resolve("reclaimed"));

        Outcome r = run("verify", dir.toString());
        assertEquals("", r.err());
        assertEquals(StorageTool.EXIT_CLEAN, r.exitCode(), r.out());
        assertTrue(r.out().contains("NOTE " + gone + " was removed while verify ran"), r.out());
        assertTrue(r.out().contains(MESSAGES + " message(s), " + (MESSAGES - ACKED_PREFIX - 1) + " unacked"), r.out());
        assertTrue(r.out().contains("Result: CLEAN"), r.out());
    }

    /** A segment whose size cannot be read is its queue's damage; before, it stopped the run with {@code error: ...}. */
    @Test
    void shouldReportASegmentThatCannotBeReadAsItsQueuesDamageAndGoOn() throws IOException {
        Path segments = dir.resolve("queues/empty/segments");
        Files.createDirectories(segments);
        Path loop = segments.resolve(SegmentFiles.fileName(3));
        Files.createSymbolicLink(loop, loop); // ELOOP, not "no such file"

        Outcome r = run("verify", dir.toString());
        assertEquals("", r.err());
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out());
        assertTrue(r.out().contains("DAMAGE queue cannot be read: UncheckedIOException: cannot read the size of " + loop), r.out());
        assertTrue(r.out().contains(MESSAGES + " message(s), " + (MESSAGES - ACKED_PREFIX - 1) + " unacked"), r.out());
        assertTrue(r.out().contains("Result: DAMAGED (1 of 2 queue(s))"), r.out());
    }

    /** A zero-byte segment file is named as empty; before, the note read "Chronicle's index counts -1 records ... a broker appending". */
    @Test
    void shouldNameAnEmptySegmentFileAsEmpty() throws IOException {
        Path segments = dir.resolve("queues/orders/segments");
        int next = 0;
        while (Files.exists(segments.resolve(SegmentFiles.fileName(next)))) {
            next++;
        }
        Path empty = Files.createFile(segments.resolve(SegmentFiles.fileName(next)));

        Outcome r = run("verify", dir.toString());
        assertEquals(StorageTool.EXIT_CLEAN, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().contains("NOTE segment " + next + ": " + empty + " is empty (0 bytes): it holds no records"), r.out());
        assertFalse(r.out().contains("counts -1"), r.out());
        assertFalse(r.out().contains("broker appending"), r.out());
    }

    /**
     * A producer checkpoint that does not read is damage (the broker sets it aside and rebuilds its producer state from the
     * stored records, forgetting the producers of messages already reclaimed); verify used to say CLEAN.
     */
    @Test
    void shouldReportAProducerCheckpointThatDoesNotReadAndExitOne() throws IOException {
        Path checkpoint = dir.resolve("queues/orders/producers.checkpoint");
        Files.write(checkpoint, "not a producer checkpoint at all, but text".getBytes(StandardCharsets.US_ASCII));

        Outcome r = run("verify", dir.toString());
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().contains("DAMAGE producer state file " + checkpoint + " is corrupt: magic"), r.out());
        assertTrue(r.out().contains("rebuilds the producer state from the stored records"), r.out());
    }

    /**
     * A producer checkpoint whose header's covered id was damaged, its magic, length and body intact, is damage too: the
     * broker sets it aside (rule R6 would have reclaimed by that id). Verify said CLEAN of it, as the broker trusted it.
     */
    @Test
    void shouldReportAProducerCheckpointWhoseCoveredIdIsDamaged() throws IOException {
        Path queue = dir.resolve("queues/orders");
        ProducerTable table = new ProducerTable(10, 60_000, 100);
        table.stored(7, 0, 1, 1_000);
        ProducerCheckpoint.write(queue, ProducerCheckpoint.encode(table, 5));
        try (RandomAccessFile file = new RandomAccessFile(ProducerCheckpoint.file(queue).toFile(), "rw")) {
            file.seek(8);
            file.writeLong(5 | 1L << 32);
        }

        Outcome r = run("verify", dir.toString());
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().contains("DAMAGE producer state file " + ProducerCheckpoint.file(queue)
                + " is corrupt: the CRC32C of its header and body does not match the one it holds"), r.out());
    }

    /**
     * An ack checkpoint whose generation was damaged, its body intact, is damage: the broker refuses the queue, naming the
     * file. Verify said CLEAN of it, as the broker read it (and ignored the journal, or refused the queue as if the
     * checkpoint had been replaced).
     */
    @Test
    void shouldReportAnAckCheckpointWhoseGenerationIsDamaged() throws IOException {
        Path checkpoint = dir.resolve("queues/orders/acks").resolve(AckFiles.CHECKPOINT);
        try (RandomAccessFile file = new RandomAccessFile(checkpoint.toFile(), "rw")) {
            file.seek(8);
            long generation = file.readLong();
            file.seek(8);
            file.writeLong(generation ^ 1L << 40);
        }

        Outcome r = run("verify", dir.toString());
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().contains("DAMAGE ack state: ack state file " + checkpoint + " is corrupt at offset 24: CRC32C"), r.out());
    }

    /**
     * An ack journal whose header's generation was damaged while its records are of the checkpoint's is damage, named
     * with its file, though the broker replays those records (rule "the records name their generation").
     */
    @Test
    void shouldReportAnAckJournalWhoseGenerationIsDamaged() throws IOException {
        Path journal = dir.resolve("queues/orders/acks").resolve(AckFiles.JOURNAL);
        try (MessageStore store = MessageStore.open(dir, config())) {
            QueueStore orders = store.queue("orders");
            try (io.sluice.storage.QueueReader reader = orders.openReader()) {
                orders.ack(reader.next().id()); // a record in the journal, of the checkpoint's generation
            }
            try (RandomAccessFile file = new RandomAccessFile(journal.toFile(), "rw")) {
                file.seek(8);
                long generation = file.readLong();
                file.seek(8);
                file.writeLong(generation & (generation - 1));
            }

            Outcome r = run("verify", dir.toString());
            assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out() + r.err());
            assertTrue(r.out().contains("DAMAGE ack journal " + journal + ": its header says generation "), r.out());
            assertTrue(r.out().contains("ack journal: 1 intact record(s)"), r.out());
        }
    }

    /** An incarnation file that does not check out is damage, named with its file: the broker refuses the queue. */
    @Test
    void shouldReportADamagedIncarnationFile() throws IOException {
        Path file = dir.resolve("queues/orders").resolve(QueueIncarnation.FILE);
        byte[] bytes = Files.readAllBytes(file);
        bytes[new String(bytes, StandardCharsets.UTF_8).indexOf(" created") - 1] ^= 0x01;
        Files.write(file, bytes);

        Outcome r = run("verify", dir.toString());
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().contains("DAMAGE incarnation file " + file + " is damaged (its CRC32C is "), r.out());
    }

    /**
     * A forced mark that does not check out is damage, named with its file (the broker ignores it and checks the whole
     * last segment); an empty or zero-filled one is only noted, being what a machine crash leaves of a mark never forced.
     */
    @Test
    void shouldReportAForcedMarkThatDoesNotCheckOutAndNoteABlankOne() throws IOException {
        Path mark = dir.resolve("queues/orders/forced.mark");
        byte[] garbage = new byte[44];
        Arrays.fill(garbage, (byte) 0x5a);
        Files.write(mark, garbage);
        Outcome r = run("verify", dir.toString());
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().contains("DAMAGE forced mark " + mark + " does not check out: its magic and version are"), r.out());

        Files.write(mark, new byte[44]);
        r = run("verify", dir.toString());
        assertEquals(StorageTool.EXIT_CLEAN, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().contains("NOTE forced mark " + mark + ": it holds only zeros"), r.out());
    }

    /**
     * A mark whose size, magic and version are right and only its checksum fails is what reading it as the broker
     * rewrites it in place (verify beside a running broker), or a machine crash's torn write, leaves: noted, not damage
     * (from a review: verify reported DAMAGE, exit 1, for a broker doing its work).
     */
    @Test
    void shouldNoteAForcedMarkWhoseChecksumAloneFails() throws IOException {
        Path mark = dir.resolve("queues/orders/forced.mark");
        // The broker's layout (magic "SFMK", version 2, four longs), its checksum not that of what precedes it.
        ByteBuffer torn = ByteBuffer.allocate(44).order(ByteOrder.LITTLE_ENDIAN).putInt(0x4b4d4653).putInt(2)
                .putLong(5).putLong(1000).putLong(1).putLong(2).putInt(12345);
        Files.write(mark, torn.array());
        Outcome r = run("verify", dir.toString());
        assertEquals(StorageTool.EXIT_CLEAN, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().contains("NOTE forced mark " + mark + ": its checksum does not hold"), r.out());
    }

    private static void assertUsage(Outcome r, String expected) {
        assertEquals(StorageTool.EXIT_USAGE, r.exitCode(), r.out() + r.err());
        assertTrue(r.err().contains(expected), r.err());
        assertTrue(r.err().contains("usage:"), r.err());
        assertFalse(r.err().isEmpty());
    }
}
