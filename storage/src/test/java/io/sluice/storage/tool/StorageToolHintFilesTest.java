package io.sluice.storage.tool;

import io.sluice.storage.DurabilityMode;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.reclaim.RelocationIntent;
import io.sluice.storage.segment.SegmentFiles;
import io.sluice.storage.segment.SegmentTallyFile;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What verify says of the files the broker's open reads as hints or marks: a sealed segment's tally, a queue's relocation
 * intent, the data directory's clean-shutdown mark. Each is read by the broker's own rules; a file the broker would not
 * have written is damage, a shape a crash or a running broker leaves is noted, and nothing ends in a stack trace. Before,
 * verify read none of them and said CLEAN of garbage in each.
 */
class StorageToolHintFilesTest {
    /** Three segments of 1 MiB: about 3,400 records of 256 bytes each. */
    private static final int MESSAGES = 7_500;

    @TempDir
    Path dir;
    private final List<Long> ids = new ArrayList<>();

    private static Outcome run(String... args) {
        Outcome outcome = Outcome.of(args);
        assertFalse(outcome.err().contains("\tat ") || outcome.err().contains("Exception"), "no stack trace: " + outcome.err());
        return outcome;
    }

    private Outcome verify() {
        return run("verify", dir.toString());
    }

    private static StoreConfig config(DurabilityMode durability) {
        return StoreConfig.builder().durability(durability).segmentBytes(StoreConfig.MIN_SEGMENT_BYTES)
                .maxMessageBytes(64 << 10).build();
    }

    @BeforeEach
    void createStore() {
        try (MessageStore store = MessageStore.open(dir, config(DurabilityMode.NEVER))) {
            QueueStore orders = store.createQueue("orders");
            for (int i = 0; i < MESSAGES; i++) {
                ids.add(orders.append(7, i, null, ByteBuffer.wrap(new byte[256])));
            }
        }
        assertEquals(2, ids.get(MESSAGES - 1) >>> 32, "the messages fill segments 0, 1 and 2");
    }

    private Path queue() {
        return dir.resolve("queues").resolve("orders");
    }

    private Path segments() {
        return queue().resolve("segments");
    }

    private Path tally(int segment) {
        return SegmentTallyFile.file(segments(), segment);
    }

    private long recordsIn(int segment) {
        return ids.stream().filter(id -> id >>> 32 == segment).count();
    }

    private static void assertClean(Outcome r) {
        assertEquals(StorageTool.EXIT_CLEAN, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().contains("Result: CLEAN"), r.out());
    }

    private static void assertDamaged(Outcome r, String line) {
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().contains("\n  DAMAGE " + line + "\n"), r.out());
        assertTrue(r.out().contains("Result: DAMAGED (1 of 1 queue(s))"), r.out());
    }

    private static void assertNoted(Outcome r, String line) {
        assertClean(r);
        assertTrue(r.out().contains("\n  NOTE " + line + "\n"), r.out());
    }

    @Test
    void aStoreAsTheBrokerLeftItSaysNothingOfItsHintFiles() {
        assertTrue(Files.isRegularFile(tally(0)) && Files.isRegularFile(tally(1)), "sealed segments have their tallies");
        Outcome r = verify();
        assertClean(r);
        assertFalse(r.out().contains("NOTE"), r.out());
    }

    /** The tally is written whole under a temporary name and renamed: bytes that are not its layout are not the broker's. */
    @Test
    void aTallyOfGarbageIsDamageAndOneCutShortToo() throws IOException {
        byte[] garbage = new byte[36];
        Arrays.fill(garbage, (byte) 0x5a);
        Files.write(tally(0), garbage);
        assertDamaged(verify(), "segment 0: tally " + tally(0) + " does not check out: its magic and version are 0x5a5a5a5a"
                + " 1515870810, not 0x594c5453 1; the broker ignores it and reads the segment instead");

        Files.write(tally(0), Arrays.copyOf(Files.readAllBytes(tally(1)), 20));
        assertDamaged(verify(), "segment 0: tally " + tally(0) + " does not check out: it holds 20 bytes, not 36; the broker"
                + " ignores it and reads the segment instead");
    }

    /** Never forced: a machine crash may keep its name and not its data. */
    @Test
    void anEmptyOrZeroTallyIsNoted() throws IOException {
        Files.write(tally(0), new byte[0]);
        assertNoted(verify(), "segment 0: tally " + tally(0) + ": it is empty (a machine crash kept its name, not its data: it"
                + " is never forced); the broker reads the segment instead");

        Files.write(tally(1), new byte[36]);
        assertNoted(verify(), "segment 1: tally " + tally(1) + ": it holds only zeros (a machine crash kept its name, not its"
                + " data: it is never forced); the broker reads the segment instead");
    }

    /**
     * A tally whose checksum holds and whose record count is Chronicle's is believed by the broker instead of the segment:
     * figures other than the segment's are damage. One counting other records than Chronicle is what a crash that took the
     * segment's tail leaves, and the broker ignores it: noted.
     */
    @Test
    void aTallyTheBrokerWouldBelieveWithOtherFiguresIsDamageAndOneWithAnotherCountIsNoted() throws IOException {
        long records = recordsIn(0);
        SegmentTallyFile.write(segments(), 0, new SegmentTallyFile.Tally(records, records * 256 + 1, 0));
        assertDamaged(verify(), "segment 0: tally " + tally(0) + " counts " + records + " records, " + (records * 256 + 1)
                + " message bytes and 0 staged, and the segment holds " + records + " records, " + records * 256
                + " message bytes and 0 staged: the broker believes it (its checksum holds and its record count is"
                + " Chronicle's) and takes its figures instead of reading the segment");

        SegmentTallyFile.write(segments(), 0, new SegmentTallyFile.Tally(records + 5, (records + 5) * 256, 0));
        assertNoted(verify(), "segment 0: tally " + tally(0) + " counts " + (records + 5) + " records where Chronicle's index"
                + " counts " + records + " (a crash took records of the segment after its tally was written); the broker"
                + " ignores it and reads the segment instead");

        SegmentTallyFile.write(segments(), 0, new SegmentTallyFile.Tally(records, records * 256, records + 1));
        assertDamaged(verify(), "segment 0: tally " + tally(0) + " does not check out: its figures are not a segment's"
                + " (records " + records + ", message bytes " + records * 256 + ", staged " + (records + 1) + "); the broker"
                + " ignores it and reads the segment instead");
    }

    @Test
    void aTallyThatIsADirectoryIsDamage() throws IOException {
        Files.delete(tally(0));
        Files.createDirectory(tally(0));
        assertDamaged(verify(), "segment 0: tally " + tally(0) + " is not a regular file: the broker cannot read it and reads"
                + " the segment instead");
    }

    private Path intent() {
        return queue().resolve(RelocationIntent.FILE);
    }

    /** Written and forced before any copy: bytes that are not its 12 are not the broker's. */
    @Test
    void aRelocationIntentOfGarbageIsDamageAndOneCutShortToo() throws IOException {
        Files.writeString(intent(), "garbage-bytes");
        String after = "; the broker's next start checks every segment for relocated copies (rule R5), then removes it";
        assertDamaged(verify(), "relocation intent " + intent() + " does not check out: it holds 13 bytes, not 12" + after);

        new RelocationIntent(queue()).write(ids.get(10));
        byte[] bytes = Files.readAllBytes(intent());
        bytes[3] ^= 0x10;
        Files.write(intent(), bytes);
        assertDamaged(verify(), "relocation intent " + intent() + " does not check out: its CRC32C does not hold" + after);

        try (RandomAccessFile file = new RandomAccessFile(intent().toFile(), "rw")) {
            file.setLength(5);
        }
        assertDamaged(verify(), "relocation intent " + intent() + " does not check out: it holds 5 bytes, not 12" + after);
    }

    @Test
    void aRelocationIntentThatChecksOutOrIsBlankIsNoted() throws IOException {
        new RelocationIntent(queue()).write(ids.get(3_000));
        assertNoted(verify(), String.format("relocation intent %s: a relocation pass was under way (a broker beside the tool"
                + " running it, or one stopped during it); the broker's next start checks the records after id 0x%x for"
                + " relocated copies and forces their segments (rules R4, R5)", intent(), ids.get(3_000)));

        Files.write(intent(), new byte[0]);
        assertNoted(verify(), "relocation intent " + intent() + ": it is empty (a crash during its write, before its force);"
                + " the broker's next start checks every segment for relocated copies (rule R5), then removes it");

        Files.write(intent(), new byte[12]);
        assertNoted(verify(), "relocation intent " + intent() + ": it holds only zeros (a crash during its write, before its"
                + " force); the broker's next start checks every segment for relocated copies (rule R5), then removes it");
    }

    /** Recovery removes the intent: a directory with something in it cannot be removed, and the queue's open fails. */
    @Test
    void aRelocationIntentThatIsADirectoryIsDamage() throws IOException {
        Files.createDirectories(intent().resolve("inside"));
        assertDamaged(verify(), "relocation intent " + intent() + " is not a regular file: the broker's next start cannot read"
                + " it, checks every segment for relocated copies (rule R5), and refuses to open the queue if it cannot"
                + " remove it");
    }

    private Path cleanShutdown() {
        return dir.resolve("clean-shutdown");
    }

    /** The data directory's lines come before the queues'; damage there is counted in the result. */
    private static void assertStoreDamaged(Outcome r, String line) {
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().contains("Verifying ") && r.out().contains(": 1 queue(s)\n  DAMAGE " + line + "\n"), r.out());
        assertTrue(r.out().contains("Result: DAMAGED (the data directory, and 0 of 1 queue(s))"), r.out());
    }

    private static void assertStoreNoted(Outcome r, String line) {
        assertClean(r);
        assertTrue(r.out().contains(": 1 queue(s)\n  NOTE " + line + "\n"), r.out());
    }

    /** A store closed cleanly (not under never) leaves the mark the next open believes: nothing to say of it. */
    @Test
    void theMarkOfACleanCloseIsNotMentioned() throws IOException {
        MessageStore.open(dir, config(DurabilityMode.ALWAYS)).close();
        assertTrue(Files.isRegularFile(cleanShutdown()), "a clean close under always leaves its mark");
        Outcome r = verify();
        assertClean(r);
        assertFalse(r.out().contains("clean-shutdown"), r.out());
    }

    @Test
    void aCleanShutdownMarkOfGarbageIsDamage() throws IOException {
        Files.write(cleanShutdown(), new byte[] {(byte) 0xff, 0x01, 'x', '\n', 0x00});
        assertStoreDamaged(verify(), "clean-shutdown mark " + cleanShutdown() + " is not a mark the broker writes (5 bytes,"
                + " not one line naming a directory of queues); the broker takes the last stop for an unclean one and forces"
                + " every segment at its next start");
    }

    /** Never forced: empty or cut short, it is what a machine crash leaves, and what an earlier broker wrote (empty). */
    @Test
    void anEmptyOrCutShortCleanShutdownMarkIsNoted() throws IOException {
        Files.write(cleanShutdown(), new byte[0]);
        String unclean = " (a machine crash kept its name, not all of its data: it is never forced); the broker takes the"
                + " last stop for an unclean one and forces every segment at its next start";
        assertStoreNoted(verify(), "clean-shutdown mark " + cleanShutdown() + ": it is empty" + unclean);

        MessageStore.open(dir, config(DurabilityMode.ALWAYS)).close();
        byte[] mark = Files.readAllBytes(cleanShutdown());
        Files.write(cleanShutdown(), Arrays.copyOf(mark, mark.length - 4));
        assertStoreNoted(verify(), "clean-shutdown mark " + cleanShutdown() + ": it is cut short" + unclean);

        Files.write(cleanShutdown(), new byte[mark.length]);
        assertStoreNoted(verify(), "clean-shutdown mark " + cleanShutdown() + ": it holds only zeros" + unclean);
    }

    /** A copy of the data directory (a restored backup, cp, rsync) has another identity: its files may be in no disk yet. */
    @Test
    void aCleanShutdownMarkNamingAnotherDirectoryIsNoted() throws IOException {
        Files.writeString(cleanShutdown(), "queues (dev=fd00,ino=1)\n");
        Outcome r = verify();
        assertClean(r);
        assertTrue(r.out().contains(": 1 queue(s)\n  NOTE clean-shutdown mark " + cleanShutdown() + " names another directory"
                + " of queues, (dev=fd00,ino=1), not this one, "), r.out());
        assertTrue(r.out().contains(": this data directory is a copy, whose files may not be on disk yet; the broker forces"
                + " every segment at its next start\n"), r.out());
    }

    /** The broker's open reads it whole and fails on a directory: the store is refused. */
    @Test
    void aCleanShutdownMarkThatIsADirectoryIsDamage() throws IOException {
        Files.createDirectory(cleanShutdown());
        assertStoreDamaged(verify(), "clean-shutdown mark " + cleanShutdown() + " is not a regular file: a broker cannot read"
                + " it and refuses to open the store");
    }
}
