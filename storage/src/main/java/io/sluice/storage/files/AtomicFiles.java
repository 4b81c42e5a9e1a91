package io.sluice.storage.files;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * Files replaced whole (the ack and producer checkpoints): written under a temporary name beside the
 * file, {@code <name>.tmp}, forced, renamed over the file, and the directory forced, so that at every
 * instant the file is a complete old one or a complete new one, after a machine crash too. A
 * temporary file left by a write that died is replaced by the next write. Stateless.
 *
 * <p>{@link #write} takes every step; a caller that forces many files together (a group of new
 * queues) takes them one at a time: {@link #writeTemporary} without forcing, its own forces,
 * {@link #install}, then {@link #fsyncDirectory}.
 */
public final class AtomicFiles {
    /** What goes into the file, written into its channel from position 0. */
    @FunctionalInterface
    public interface Content {
        void writeTo(FileChannel channel) throws IOException;
    }

    private AtomicFiles() {
    }

    /** The name a file is written under before it is renamed into place. */
    public static Path temporary(Path file) {
        return file.resolveSibling(file.getFileName() + ".tmp");
    }

    /** Replaces {@code file} with {@code content}, atomically and durably. */
    public static void write(Path file, Content content) throws IOException {
        Path temporary = writeTemporary(file, content, true);
        install(temporary, file);
        fsyncDirectory(file.toAbsolutePath().getParent());
    }

    /** Writes {@code content} under {@code file}'s temporary name, forced if {@code force}; returns that name. */
    public static Path writeTemporary(Path file, Content content, boolean force) throws IOException {
        Path temporary = temporary(file);
        Files.deleteIfExists(temporary);
        try (FileChannel channel = FileChannel.open(temporary, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            content.writeTo(channel);
            if (force) {
                channel.force(true);
            }
        }
        return temporary;
    }

    /** Renames a forced temporary file over {@code file}: its entry is durable once the directory is forced. */
    public static void install(Path temporary, Path file) throws IOException {
        Files.move(temporary, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    /**
     * Makes a rename in {@code directory} durable: without it a machine crash can bring back the old
     * directory entry even though the renamed file's data was forced.
     */
    public static void fsyncDirectory(Path directory) throws IOException {
        try (FileChannel channel = FileChannel.open(directory, StandardOpenOption.READ)) {
            channel.force(true);
        }
    }

    /** Writes all of {@code bytes} at the channel's position (a write may take less than it is given). */
    public static void writeFully(FileChannel channel, ByteBuffer bytes) throws IOException {
        while (bytes.hasRemaining()) {
            channel.write(bytes);
        }
    }
}
