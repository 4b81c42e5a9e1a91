package io.sluice.storage.files;

import io.sluice.storage.MessageStore;
import io.sluice.storage.StorageFilesExhaustedException;
import io.sluice.storage.segment.SegmentFiles;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.LongStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The append that moves a queue into a new segment when the process has a descriptor for Chronicle's
 * new segment file but not for the channels its forces need (rule "descriptors are taken by the
 * append", docs/storage.md). Run in a child JVM under {@code prlimit} ({@link SegmentEntryWithoutDescriptors})
 * with every descriptor but one taken: the append is refused, and it must leave no record at all, or a
 * broker replaying its producers' state at the next start (which reads acknowledged records too) takes
 * the refused message as stored and answers its resend DUPLICATE.
 */
@Tag("slow")
class SegmentEntryFileLimitTest {
    private static final int OPEN_FILE_LIMIT = 200;

    @TempDir
    Path dir;

    @Test
    void anAppendRefusedForWantOfDescriptorsLeavesNoRecordForTheReplayToFind() throws Exception {
        Path data = dir.resolve("data");
        List<String> lines = runChild(data, 1, 0);
        int refusedSequence = SegmentEntryWithoutDescriptors.FILLING_RECORDS + 1;
        String refused = line(lines, "append " + refusedSequence + " ");
        assertTrue(refused.contains(" refused ") && refused.contains("too many open files"),
                "the append into segment 1 is refused for want of descriptors: " + refused);
        assertTrue(Files.exists(data.resolve("queues/q/segments").resolve(SegmentFiles.fileName(1))),
                "Chronicle had its descriptor: the refusal is for the channels the segment's forces need");
        assertTrue(lines.contains("done"), String.join("\n", lines));

        List<Long> sequences = new ArrayList<>();
        try (MessageStore store = MessageStore.open(data, SegmentEntryWithoutDescriptors.config())) {
            store.queue("q").forEachRecordAfter(-1, (id, codec) -> {
                assertEquals(SegmentEntryWithoutDescriptors.PRODUCER, codec.producerId());
                sequences.add(codec.producerSequence());
            });
        }
        assertEquals(LongStream.rangeClosed(1, SegmentEntryWithoutDescriptors.FILLING_RECORDS).boxed().toList(), sequences, "the records the replay of producer state reads: the refused one is not among them");
    }

    /**
     * Rule "a queue out of descriptors backs off": while the channels cannot be opened, the appends after the
     * refused one are refused with its error without trying the open again (a syscall and an exception per
     * message on the broker's event loop), at most one attempt a second.
     */
    @Test
    void appendsWhileDescriptorsAreExhaustedAreRefusedWithoutTryingTheOpenAgainEachTime() throws Exception {
        int again = 200;
        List<String> lines = runChild(dir.resolve("data"), 1, again);
        int first = SegmentEntryWithoutDescriptors.FILLING_RECORDS + 1;
        assertTrue(line(lines, "append " + first + " ").contains(" refused "), String.join("\n", lines));
        List<String> refusedAgain = new ArrayList<>();
        for (int sequence = first + 1; sequence <= first + again; sequence++) {
            String line = line(lines, "append " + sequence + " ");
            assertTrue(line.contains(" refused ") && line.contains("too many open files"), "refused like the first: " + line);
            if (!line.endsWith(" cause " + StorageFilesExhaustedException.class.getName())) {
                refusedAgain.add(line); // refused by a new attempt (caused by the open's own error), not the back-off
            }
        }
        long tookMs = Long.parseLong(line(lines, "again took ").substring("again took ".length()));
        assertTrue(refusedAgain.size() <= 1 + tookMs / 1000, refusedAgain.size() + " of " + again + " appends in " + tookMs
                + " ms tried to open the files again, the first: " + (refusedAgain.isEmpty() ? "" : refusedAgain.get(0)));
    }

    private List<String> runChild(Path dataDir, int free, int again) throws IOException, InterruptedException {
        return FileLimitedChild.run(dir, OPEN_FILE_LIMIT, 60, SegmentEntryWithoutDescriptors.class, dataDir.toString(),
                Integer.toString(free), Integer.toString(again));
    }

    private static String line(List<String> lines, String prefix) {
        return lines.stream().filter(l -> l.startsWith(prefix)).findFirst()
                .orElseThrow(() -> new AssertionError("no line " + prefix + "in\n" + String.join("\n", lines)));
    }
}
