package io.sluice.storage.durability;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;

/**
 * Forces a file's written data to disk. The store uses {@link #FSYNC}. Tests substitute one that fails
 * the way a disk does (an EIO once, then success on retry, as Linux reports a writeback error only
 * once per file description), to check that a failed force is never followed by a confirm; or one
 * that records what each force made durable, to build the disk a machine crash would leave.
 */
@FunctionalInterface
public interface FileForcer {
    FileForcer FSYNC = (channel, file) -> channel.force(false);

    /** Forces {@code channel}, open on {@code file} (a segment). */
    void force(FileChannel channel, Path file) throws IOException;

    /** Forces the entries of {@code directory} (a new or renamed file's name), open as {@code channel}. */
    default void forceDirectory(FileChannel channel, Path directory) throws IOException {
        channel.force(true);
    }

    /**
     * Called just before the memory-mapped {@code file} (a queue's ack journal) is forced with msync,
     * (without the queue's lock; appends may go on meanwhile): its content now is durable once that force returns.
     */
    default void forcingMapped(Path file) {
    }
}
