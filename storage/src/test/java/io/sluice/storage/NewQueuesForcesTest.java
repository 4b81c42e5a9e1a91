package io.sluice.storage;

import io.sluice.storage.durability.FileForcer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What creating queues forces, counted through the store's {@link FileForcer} seam: each new file and
 * each new directory entry once, and every file of a group before any directory (rule "write
 * everything, then force everything", docs/storage.md "Creating queues").
 */
class NewQueuesForcesTest {
    @TempDir
    Path temp;

    /** One force, in the order the forcer saw them. */
    private record Force(Path path, boolean directory) {
    }

    private final List<Force> forces = new CopyOnWriteArrayList<>();
    /** Files whose force fails, as a disk's EIO would. */
    private volatile Predicate<Path> failing = path -> false;
    /** Directories whose force fails. */
    private volatile Predicate<Path> failingDirectory = path -> false;

    private final FileForcer counting = new FileForcer() {
        @Override
        public void force(FileChannel channel, Path file) throws IOException {
            record(file, false, failing);
            channel.force(false);
        }

        @Override
        public void forceDirectory(FileChannel channel, Path directory) throws IOException {
            record(directory, true, failingDirectory);
            channel.force(true);
        }
    };

    /** Counts a force of {@code path}, or fails it as a disk's EIO would. */
    private void record(Path path, boolean directory, Predicate<Path> fails) throws IOException {
        if (fails.test(path)) {
            throw new IOException("Input/output error (injected)");
        }
        forces.add(new Force(path, directory));
    }

    private MessageStore open() {
        return MessageStore.open(temp.resolve("data"), StoreConfig.builder().reservedDiskBytes(64L << 20).build(), counting);
    }

    @Test
    void aGroupForcesEachNewFileAndEntryOnceAndAllFilesBeforeAnyDirectory() {
        int queues = 40;
        List<String> names = new ArrayList<>();
        for (int i = 0; i < queues; i++) {
            names.add("q-" + i);
        }
        try (MessageStore store = open()) {
            store.createQueues(names).forEach(f -> assertTrue(f.isDone() && !f.isCompletedExceptionally()));
            Path queuesDirectory = store.dataDirectory().resolve("queues");
            Set<Force> expected = new HashSet<>();
            for (String name : names) {
                Path q = queuesDirectory.resolve(name);
                expected.add(new Force(q.resolve("incarnation.tmp"), false));
                expected.add(new Force(q.resolve("acks").resolve("acks.checkpoint.tmp"), false));
                expected.add(new Force(q.resolve("acks").resolve("acks.journal.tmp"), false));
                expected.add(new Force(q.resolve("acks"), true));
                expected.add(new Force(q.resolve("segments"), true));
                expected.add(new Force(q, true));
            }
            expected.add(new Force(queuesDirectory, true));
            List<Force> seen = List.copyOf(forces);
            assertEquals(6 * queues + 1, seen.size(), "forces of a group of " + queues + " new queues: " + seen);
            assertEquals(expected, new HashSet<>(seen));
            int lastFile = -1;
            int firstDirectory = seen.size();
            for (int i = 0; i < seen.size(); i++) {
                if (seen.get(i).directory()) {
                    firstDirectory = Math.min(firstDirectory, i);
                } else {
                    lastFile = i;
                }
            }
            assertTrue(lastFile < firstDirectory, "a file was forced after a directory: " + seen);
        }
    }

    @Test
    void aFailedForceFailsOnlyItsOwnQueueWhichCanBeCreatedAgain() {
        try (MessageStore store = open()) {
            failing = path -> path.toString().contains("/queues/bad/acks/acks.journal");
            List<CompletableFuture<QueueStore>> created = store.createQueues(List.of("good", "bad"));
            assertEquals("good", created.get(0).join().name());
            CompletionException e = assertThrows(CompletionException.class, () -> created.get(1).join());
            assertTrue(e.getCause().getMessage().contains("queue 'bad'"), e.getCause().getMessage());
            assertEquals(List.of("good"), store.listQueues());
            failing = path -> false;
            assertEquals("bad", store.createQueue("bad").name());
            assertEquals(List.of("bad", "good"), store.listQueues());
        }
    }

    @Test
    void aQueueWhoseDirectoriesCouldNotBeForcedCanBeCreatedAgainOverTheFilesItLeft() {
        try (MessageStore store = open()) {
            failingDirectory = path -> path.toString().contains("/queues/late");
            assertTrue(store.createQueues(List.of("late", "other")).get(0).isCompletedExceptionally());
            failingDirectory = path -> false;
            QueueStore late = store.createQueue("late");
            assertEquals(List.of("late", "other"), store.listQueues());
            late.whenDurable(late.append(null, new byte[] {1})).join();
        }
    }

    @Test
    void aFailedForceOfTheDirectoryOfQueuesFailsTheWholeGroup() {
        try (MessageStore store = open()) {
            failingDirectory = path -> path.getFileName().toString().equals("queues");
            List<CompletableFuture<QueueStore>> created = store.createQueues(List.of("a", "b"));
            for (CompletableFuture<QueueStore> f : created) {
                CompletionException e = assertThrows(CompletionException.class, f::join);
                assertTrue(e.getCause().getMessage().startsWith("cannot force the directory of queues"), e.getCause().getMessage());
            }
            assertEquals(List.of(), store.listQueues());
            failingDirectory = path -> false;
            assertEquals(2, store.createQueues(List.of("a", "b")).stream().map(CompletableFuture::join).count());
            assertEquals(List.of("a", "b"), store.listQueues());
        }
    }

    @Test
    void oneQueueForcesItsTwoAckFilesItsIncarnationAndFourEntries() {
        try (MessageStore store = open()) {
            store.createQueue("one");
            assertEquals(3, forces.stream().filter(f -> !f.directory()).count(), forces.toString());
            assertEquals(4, forces.stream().filter(Force::directory).count(), forces.toString());
            forces.clear();
            store.createQueue("one");
            assertEquals(List.of(), forces, "a queue that exists is not created again");
        }
    }
}
