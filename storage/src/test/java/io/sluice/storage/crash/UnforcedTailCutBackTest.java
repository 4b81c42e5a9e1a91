package io.sluice.storage.crash;

import io.sluice.storage.DurabilityMode;
import io.sluice.storage.FileTrees;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StorageException;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.durability.ForcedMark;
import io.sluice.storage.segment.SegmentFiles;
import io.sluice.storage.segment.SegmentRollCycle;
import io.sluice.storage.tool.StorageTool;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.sluice.storage.ReaderIds.readAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rule "an unforced tail is cut back" (docs/storage.md, "Recovery"): a machine crash whose write-back put the last
 * segment's header and index on disk before the pages of the records appended since the last force leaves Chronicle's
 * index counting records that are not there, the shape of a segment cut short. When everything missing lies after the
 * forced mark (never forced, so never confirmed), the segment is cut back to its last readable record and the queue
 * opens; when a record at or before the mark is missing, a confirmed message is, and the open is still refused. The
 * disk images are built from exactly what was forced ({@link ForcedDiskImage}), with the segment's pages before its
 * first record (Chronicle's header and index) and the forced mark as the page cache had them.
 */
class UnforcedTailCutBackTest {
    private static final int CONFIRMED = 500;
    private static final int UNFORCED = 300;

    @TempDir
    Path temp;

    private static StoreConfig config() {
        // A minute's interval: nothing forces the unforced records but a demand, and none comes.
        return StoreConfig.builder().durability(DurabilityMode.ALWAYS).syncIntervalMs(60_000).reservedDiskBytes(64L << 20).build();
    }

    private static byte[] payload(String kind, int i) {
        return String.format("%s-%05d-", kind, i).concat("x".repeat(100)).getBytes(StandardCharsets.US_ASCII);
    }

    @Test
    void aTailLostAfterTheForcedMarkIsCutBackAndTheQueueOpensWithEveryConfirmedMessage() throws Exception {
        Path image = temp.resolve("image");
        List<Long> confirmed = new ArrayList<>();
        List<Long> unforced = new ArrayList<>();
        crashWithAnUnforcedTailLost(image, confirmed, unforced);

        String report = verify(image, StorageTool.EXIT_CLEAN);
        assertTrue(report.contains("NOTE segment 0") && report.contains("unforced tail lost in a crash")
                && report.contains("records will be cut back at the next start"), report);

        List<Long> appended = new ArrayList<>();
        try (MessageStore store = MessageStore.open(image, config())) {
            QueueStore q = store.queue("q");
            assertEquals(confirmed, readAll(q), "every confirmed message, and nothing of the lost tail");
            assertEquals(CONFIRMED, q.unackedMessages());
            for (int i = 0; i < 3; i++) {
                appended.add(q.append(null, payload("after", i)));
            }
            q.whenDurable(appended.get(2)).get(10, TimeUnit.SECONDS);
            assertEquals(unforced.subList(0, 3), appended, "appends go on after the last record kept");
            assertNoAckStateCarriedOver(q, appended);
            q.ack(confirmed.get(0));
            q.ack(appended.get(0));
        }
        try (MessageStore store = MessageStore.open(image, config())) {
            QueueStore q = store.queue("q");
            List<Long> expected = new ArrayList<>(confirmed.subList(1, CONFIRMED));
            expected.addAll(appended.subList(1, 3));
            assertEquals(expected, readAll(q), "the acks made after the cut-back hold across a restart");
            assertNoAckStateCarriedOver(q, appended.subList(1, 3));
            long next = q.append(null, payload("after", 3));
            assertTrue(next > appended.get(2));
            assertEquals(CONFIRMED + 2, q.unackedMessages());
        }
    }

    /**
     * Rule "cut ids are not given again", on a broker of its own (no exact roll point, which a cluster node keeps): a
     * consumer may have had a cut record and acknowledged it in a transaction whose commit record names its id and is
     * replayed at every start until the transaction is done; given again, the id would be a new, confirmed message that
     * replay acknowledged (found by a review). Appends continue in the next segment instead.
     */
    @Test
    void aBrokerOfItsOwnGivesNoIdOfTheCutTailAgain() throws Exception {
        Path image = temp.resolve("image");
        List<Long> confirmed = new ArrayList<>();
        List<Long> unforced = new ArrayList<>();
        crashWithAnUnforcedTailLost(image, confirmed, unforced);
        StoreConfig ofItsOwn = StoreConfig.builder().durability(DurabilityMode.ALWAYS).syncIntervalMs(60_000)
                .reservedDiskBytes(64L << 20).exactRollPoint(false).build();
        try (MessageStore store = MessageStore.open(image, ofItsOwn)) {
            QueueStore q = store.queue("q");
            assertEquals(confirmed, readAll(q), "every confirmed message, and nothing of the lost tail");
            long first = q.append(null, payload("after", 0));
            q.whenDurable(first).get(10, TimeUnit.SECONDS);
            assertTrue(first > unforced.get(unforced.size() - 1), "0x" + Long.toHexString(first) + " is past every cut id");
            assertEquals(1, SegmentRollCycle.INSTANCE.toCycle(first), "the first id of the next segment");
            assertNoAckStateCarriedOver(q, List.of(first));
        }
        try (MessageStore store = MessageStore.open(image, ofItsOwn)) {
            List<Long> expected = new ArrayList<>(confirmed);
            expected.add(SegmentRollCycle.INSTANCE.toIndex(1, 0));
            assertEquals(expected, readAll(store.queue("q")), "the message after the cut, read past the cut segment");
        }
    }

    /**
     * The journal on the crashed disk acknowledged the second cut record and counted a delivery of the third (rule "what
     * the index counts is there" runs before the ack state learns the segment's count, so that is forgotten): the new
     * messages given their ids start unacknowledged and undelivered.
     */
    private static void assertNoAckStateCarriedOver(QueueStore q, List<Long> ids) {
        for (long id : ids) {
            assertFalse(q.isAcked(id), "0x" + Long.toHexString(id) + " was never acknowledged");
            assertEquals(0, q.deliveryCount(id), "0x" + Long.toHexString(id) + " was never delivered");
        }
    }

    /**
     * The replaced segment, and the messages confirmed after the cut-back in the next one, are on the disk another machine
     * crash leaves: the cut-back forces what it wrote before the rename, and the next segment is entered as after a roll.
     */
    @Test
    void theCutBackAndTheMessagesConfirmedAfterItSurviveAnotherMachineCrash() throws Exception {
        Path image = temp.resolve("image");
        List<Long> confirmed = new ArrayList<>();
        crashWithAnUnforcedTailLost(image, confirmed, new ArrayList<>());
        Path secondCrash = temp.resolve("second-crash");
        FileTrees.copy(image, secondCrash); // the disk as the second boot finds it
        ForcedDiskImage disk = new ForcedDiskImage(image);
        try (MessageStore store = MessageStore.open(image, config(), disk)) {
            QueueStore q = store.queue("q");
            for (int i = 0; i < 3; i++) {
                long id = q.append(null, payload("after", i));
                q.whenDurable(id).get(10, TimeUnit.SECONDS);
                confirmed.add(id);
            }
            disk.overlay(secondCrash); // the power fails again here
        }
        try (MessageStore store = MessageStore.open(secondCrash, config())) {
            assertEquals(confirmed, readAll(store.queue("q")), "the messages confirmed before the cut-back and after it");
        }
    }

    @Test
    void aGapAtOrBeforeTheForcedMarkIsStillRefused() throws Exception {
        Path data = temp.resolve("data");
        Path image = temp.resolve("image");
        Path queueImage = image.resolve("queues").resolve("q");
        ForcedDiskImage disk = new ForcedDiskImage(data);
        try (MessageStore store = MessageStore.open(data, config(), disk)) {
            QueueStore q = store.createQueue("q");
            long last = -1;
            for (int i = 0; i < CONFIRMED; i++) {
                last = q.append(null, payload("confirmed", i));
            }
            q.whenDurable(last).get(10, TimeUnit.SECONDS);
            disk.build(image); // the segment's records as the first force left them
            for (int i = 0; i < UNFORCED; i++) {
                last = q.append(null, payload("confirmed-later", i));
            }
            q.whenDurable(last).get(10, TimeUnit.SECONDS); // the mark now names a record the image lacks
            writtenBackAhead(q, queueImage);
        }
        String report = verify(image, StorageTool.EXIT_DAMAGED);
        assertTrue(report.contains("DAMAGE segment 0") && !report.contains("cut back"), report);

        StorageException refused = assertThrows(StorageException.class, () -> {
            try (MessageStore store = MessageStore.open(image, config())) {
                store.queue("q");
            }
        });
        assertTrue(refused.getMessage().contains("cannot be read to its end"), refused.getMessage());
        assertTrue(refused.getMessage().contains("forced"), refused.getMessage());
    }

    /**
     * Builds in {@code image} the disk a machine crash leaves after {@link #CONFIRMED} confirmed appends and
     * {@link #UNFORCED} unforced ones, with the segment's header and index written back ahead of the unforced records.
     */
    private static void crashWithAnUnforcedTailLost(Path image, List<Long> confirmed, List<Long> unforced) throws Exception {
        Path data = image.resolveSibling("data");
        ForcedDiskImage disk = new ForcedDiskImage(data);
        try (MessageStore store = MessageStore.open(data, config(), disk)) {
            QueueStore q = store.createQueue("q");
            for (int i = 0; i < CONFIRMED; i++) {
                confirmed.add(q.append(null, payload("confirmed", i)));
            }
            q.whenDurable(confirmed.get(CONFIRMED - 1)).get(10, TimeUnit.SECONDS);
            for (int i = 0; i < UNFORCED; i++) {
                unforced.add(q.append(null, payload("unforced", i)));
            }
            // A consumer got two of them (under durability always, served before they are forced): their ack and
            // delivery count reach the disk with the journal, the records never do.
            q.ack(unforced.get(1));
            q.recordDelivery(unforced.get(2), 1);
            q.whenAcksDurable(true).get(10, TimeUnit.SECONDS);
            disk.build(image); // the power fails here: the live store is never closed into the image
            writtenBackAhead(q, image.resolve("queues").resolve("q"));
        }
    }

    /**
     * Lays over the imaged queue directory what a write-back that ran ahead of the forces put on disk: the segment's
     * pages before its first record (Chronicle's header, with the write position and record count, and its index) and
     * the forced mark, both as they are in the page cache now.
     */
    private static void writtenBackAhead(QueueStore q, Path queueImage) throws IOException {
        Path live = q.segmentDirectory().resolve(SegmentFiles.fileName(q.segmentNumbers().get(0)));
        Path imaged = queueImage.resolve("segments").resolve(live.getFileName().toString());
        byte[] now = Files.readAllBytes(live);
        int firstRecord = new String(now, StandardCharsets.ISO_8859_1).indexOf("confirmed-00000-") - 48 - 4;
        int headerPages = firstRecord / 4096 * 4096;
        assertTrue(headerPages > 0, "Chronicle's header and index fill whole pages before the first record");
        try (RandomAccessFile file = new RandomAccessFile(imaged.toFile(), "rw")) {
            file.seek(0);
            file.write(now, 0, headerPages);
        }
        // The mark names the segment file by its inode, which a machine crash keeps and a copy does not: it is written
        // again for the image's file.
        ForcedMark.Mark mark = ForcedMark.read(q.directory());
        assertNotNull(mark, "the last force's mark");
        try (ForcedMark imageMark = new ForcedMark(queueImage, queueImage.resolve("segments"))) {
            imageMark.write(new ForcedMark.Written(mark.index(), mark.segmentMessageBytes(), mark.segmentStaged()));
        }
    }

    /** Runs {@code bin/sluice verify} on {@code data}, checks its exit code, and returns its report. */
    private static String verify(Path data, int exitCode) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int code = StorageTool.run(new String[] {"verify", data.toString()}, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
        String report = out.toString(StandardCharsets.UTF_8);
        assertEquals(exitCode, code, report);
        return report;
    }

}
