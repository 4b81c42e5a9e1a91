package io.sluice.storage.crash;

import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.durability.FileForcer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A delete is durable once {@link MessageStore#deleteQueue} returns, as a creation is once {@code createQueue} returns
 * (rule "a queue exists once it is durable"). The cluster relies on it: {@code AppliedCatalog} forces its marker right
 * after applying a DELETE_QUEUE and skips the replayed entry after a restart ("each durable before the next entry"),
 * and the marker lives in the data directory, not in the directory of queues. The disk a machine crash leaves holds a
 * directory entry only as of the last force of its directory (as {@link ForcedDiskImage} and
 * {@code CreatedQueueMachineCrashTest} model it): if the directory of queues was last forced while it held the queue,
 * the queue comes back after a power cut, with its messages, and the skipped delete leaves it there for good.
 */
class DeletedQueueMachineCrashTest {
    @TempDir
    Path temp;

    @Test
    void aDeletedQueuesRemovalIsDurableWhenDeleteQueueReturns() throws Exception {
        Path data = temp.resolve("data");
        Path queues = data.resolve("queues");
        DirectoryForces forces = new DirectoryForces();
        try (MessageStore store = MessageStore.open(data, StoreConfig.builder().reservedDiskBytes(64L << 20).build(), forces)) {
            QueueStore q = store.createQueue("orders");
            long id = q.append(new byte[0], "hello".getBytes(StandardCharsets.UTF_8));
            q.whenDurable(id).get();
            assertTrue(forces.durableEntries(queues).contains("orders"), "the test's premise: the creation made the queue durable");

            store.deleteQueue("orders");

            assertFalse(Files.exists(queues.resolve("orders")), "the delete took the queue's name away");
            assertFalse(forces.durableEntries(queues).contains("orders"),
                    "deleteQueue returned, but the directory of queues was last forced while it held 'orders' (durable entries: "
                            + forces.durableEntries(queues) + "): after a machine crash the deleted queue is back with its messages");
        }
    }

    /** Keeps, per directory, the entries it held at its last force: what a machine crash leaves of it. */
    private static final class DirectoryForces implements FileForcer {
        private final Map<Path, Set<String>> durable = new ConcurrentHashMap<>();

        @Override
        public void force(FileChannel channel, Path file) throws IOException {
            channel.force(false);
        }

        @Override
        public void forceDirectory(FileChannel channel, Path directory) throws IOException {
            Set<String> entries;
            try (Stream<Path> list = Files.list(directory)) {
                entries = list.map(p -> p.getFileName().toString()).collect(Collectors.toUnmodifiableSet());
            }
            channel.force(true);
            durable.put(directory.toAbsolutePath(), entries);
        }

        Set<String> durableEntries(Path directory) {
            return durable.getOrDefault(directory.toAbsolutePath(), Set.of());
        }
    }
}
