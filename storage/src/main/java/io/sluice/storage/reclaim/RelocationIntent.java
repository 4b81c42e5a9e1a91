package io.sluice.storage.reclaim;

import io.sluice.storage.StorageException;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.OptionalLong;
import java.util.zip.CRC32C;

/**
 * The file {@code relocation.intent} in a queue's directory: present, and durable, while a relocation
 * pass may have written copies that the ack journal has not yet durably recorded. It holds the id
 * every such copy follows, so that recovery after a machine crash scans only from there (rule R5,
 * docs/storage.md) instead of the whole backlog.
 *
 * <pre>
 *   0        8                  12
 *   +--------+------------------+
 *   | after  | CRC32C of 0..8   |   little-endian
 *   +--------+------------------+
 * </pre>
 *
 * Not thread-safe: the flusher writes and clears it, recovery reads it before the queue opens.
 */
public final class RelocationIntent {
    public static final String FILE = "relocation.intent";
    private static final int BYTES = 12;

    private final Path file;
    private final Path directory;

    public RelocationIntent(Path queueDirectory) {
        this.directory = queueDirectory;
        this.file = queueDirectory.resolve(FILE);
    }

    /** Makes durable that copies may follow id {@code after}: the file is written, fsynced, and its entry too. */
    public void write(long after) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(BYTES).order(ByteOrder.LITTLE_ENDIAN).putLong(after);
        CRC32C crc = new CRC32C();
        crc.update(buffer.array(), 0, 8);
        buffer.putInt((int) crc.getValue()).flip();
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            while (buffer.hasRemaining()) {
                channel.write(buffer);
            }
            channel.force(true);
        }
        forceDirectory();
    }

    /** The pass is over and its copies are journaled durably: removes the file, durably. */
    public void clear() throws IOException {
        if (Files.deleteIfExists(file)) {
            forceDirectory();
        }
    }

    /**
     * The id copies may follow, if a pass was interrupted.
     *
     * @throws StorageException if the file does not check out (then the caller must scan everything)
     */
    public OptionalLong read() throws IOException {
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(file);
        } catch (NoSuchFileException none) {
            return OptionalLong.empty();
        }
        ByteBuffer buffer = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        CRC32C crc = new CRC32C();
        crc.update(bytes, 0, Math.min(8, bytes.length));
        if (bytes.length != BYTES || buffer.getInt(8) != (int) crc.getValue()) {
            throw new StorageException("relocation intent " + file + " of " + bytes.length + " bytes does not check out");
        }
        return OptionalLong.of(buffer.getLong(0));
    }

    private void forceDirectory() throws IOException {
        try (FileChannel channel = FileChannel.open(directory, StandardOpenOption.READ)) {
            channel.force(true);
        }
    }
}
