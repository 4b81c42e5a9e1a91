package io.sluice.broker.cluster;

import io.sluice.storage.files.AtomicFiles;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Rule R4 of docs/replication.md: the position in the log ({@link ShardApplier#position}) of the last entry that decided
 * which queues this node has (a declare, a delete, the declare of a dead-letter queue), kept in
 * {@code <data-dir>/catalog-applied} and written, atomically and forced, before the next entry is applied.
 *
 * <p>Such an entry's outcome depends on the queues there are when it is applied ({@code limits.max-queues}, a queue of
 * that name with other settings). A restart replays the log after its last marker into stores that already reflect
 * every entry applied before the crash, the later deletes and declares included, so a replayed declare could find room
 * (or no queue with other settings) where every node had refused it, and create a queue only that node has. Declares
 * and deletes are applied in log order on the state machine thread, each durable before the next entry, so an entry at
 * or below this position has its outcome in the stores already and is skipped, and the first one above it meets the
 * queues as they were when it was first applied.
 *
 * <p>Threads: the shard's state machine thread.
 */
final class AppliedCatalog {
    private static final Logger LOG = LoggerFactory.getLogger(AppliedCatalog.class);
    static final String FILE = "catalog-applied";

    private final Path file;
    /** -1 while none was applied (or none since the file was made). */
    private long applied;

    AppliedCatalog(Path file) {
        this.file = file;
        this.applied = read(file);
    }

    private static long read(Path file) {
        try {
            if (!Files.exists(file)) {
                return -1;
            }
            return Long.parseLong(Files.readString(file, StandardCharsets.UTF_8).trim());
        } catch (IOException e) {
            throw new UncheckedIOException("reading the position of the last queue declare or delete applied from " + file
                    + " failed", e);
        } catch (NumberFormatException e) {
            throw new IllegalStateException(file + " should hold the position of the last queue declare or delete applied, "
                    + "a number; it holds something else", e);
        }
    }

    /** True if the entry at {@code position} was applied here already: its outcome is in the stores. */
    boolean covers(long position) {
        return position <= applied;
    }

    /**
     * The entry at {@code position} is applied and its outcome durable. If the file cannot be written, a replay of that
     * entry decides again, as before this was kept, and an ERROR says so.
     */
    void applied(long position) {
        if (position <= applied) {
            return;
        }
        try {
            AtomicFiles.write(file, channel -> AtomicFiles.writeFully(channel,
                    ByteBuffer.wrap((position + "\n").getBytes(StandardCharsets.UTF_8))));
        } catch (IOException | RuntimeException e) {
            LOG.error("Writing {} (the log position {} of the last queue declare or delete applied) failed: should this node "
                    + "restart before its next snapshot marker, the declares and deletes after the previous one are decided "
                    + "again when replayed, against queues that may not be as they were.", file, position, e);
        }
        applied = position;
    }
}
