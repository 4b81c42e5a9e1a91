package io.sluice.storage.crash;

import io.sluice.storage.FileTrees;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.durability.FileForcer;
import io.sluice.storage.segment.SegmentFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Sibling of rule "the forced mark" disbelieving a copy of the queue's files (other inodes): the {@code clean-shutdown}
 * file says "every segment was forced", but about the files of the store that closed, not about a copy of its data
 * directory (a backup restored, a move to another disk with cp/rsync), whose files a copy writes into the page cache
 * only. An open of such a copy skips the forces at open, counts every record durable and serves them (a resend is
 * answered DUPLICATE, a commit record is applied) although none of the copy's segment files was ever forced: a machine
 * crash then loses what those answers confirmed (docs/storage.md, "Recovery", rule "recovery serves only what is on disk").
 */
class CopiedCleanStoreForcesTest {
    @TempDir
    Path temp;

    @Test
    void anOpenOfACopyOfACleanlyClosedStoreForcesTheCopysSegmentsBeforeCountingThemDurable() throws Exception {
        StoreConfig config = StoreConfig.builder().reservedDiskBytes(64L << 20).build();
        Path original = temp.resolve("original");
        long last = -1;
        try (MessageStore store = MessageStore.open(original, config)) {
            QueueStore q = store.createQueue("q");
            for (int i = 0; i < 100; i++) {
                last = q.append(new byte[0], ("m" + i).getBytes(StandardCharsets.UTF_8));
            }
            q.whenDurable(last).get();
        }
        assertTrue(Files.exists(original.resolve("clean-shutdown")), "the test's premise: a clean close");

        Path copy = temp.resolve("copy");
        FileTrees.copy(original, copy); // new inodes, written into the page cache only, as cp -a leaves them

        RecordingForcer forces = new RecordingForcer();
        try (MessageStore store = MessageStore.open(copy, config, forces)) {
            QueueStore q = store.queue("q");
            assertEquals(last, q.durableIndex(), "the copy's records count as durable from the open");
            Path segment = SegmentFiles.file(q.segmentDirectory(), 0);
            assertTrue(forces.forced.contains(segment.toAbsolutePath()),
                    "the copy's segment " + segment + " was never forced, yet its " + (last + 1) + " records count as durable "
                            + "(forced at open: " + forces.forced + ")");
        }
    }

    /** Records which files were forced. */
    private static final class RecordingForcer implements FileForcer {
        final Set<Path> forced = ConcurrentHashMap.newKeySet();

        @Override
        public void force(FileChannel channel, Path file) throws IOException {
            forced.add(file.toAbsolutePath());
            channel.force(false);
        }
    }
}
