package io.sluice.storage.durability;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;

/**
 * Forces a file's written data to disk. The store uses {@link #FSYNC}; tests substitute one that fails
 * the way a disk does (an EIO once, then success on retry, as Linux reports a writeback error only
 * once per file description), to check that a failed force is never followed by a confirm.
 */
@FunctionalInterface
public interface FileForcer {
    FileForcer FSYNC = (channel, file) -> channel.force(false);

    void force(FileChannel channel, Path file) throws IOException;
}
