package io.sluice.storage.reclaim;

import io.sluice.storage.StorageException;
import io.sluice.storage.files.ChecksummedFields;

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
     * @throws StorageException if the file does not check out ({@link #problem()}; then the caller must scan everything)
     */
    public OptionalLong read() throws IOException {
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(file);
        } catch (NoSuchFileException none) {
            return OptionalLong.empty();
        }
        ChecksummedFields.Problem problem = problemOf(bytes);
        if (problem != null) {
            throw new StorageException("relocation intent " + file + " does not check out: " + problem.description());
        }
        return OptionalLong.of(ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).getLong(0));
    }

    /**
     * Why the file does not check out by the rules of {@link #read} (for the offline verify), or null if it is missing or
     * does. {@code blank}: empty or only zeros, what a crash between its creation and its force may leave.
     *
     * @throws IOException if the file cannot be read (not a regular file, say)
     */
    public ChecksummedFields.Problem problem() throws IOException {
        try {
            return problemOf(Files.readAllBytes(file));
        } catch (NoSuchFileException none) {
            return null;
        }
    }

    private static ChecksummedFields.Problem problemOf(byte[] bytes) {
        boolean blank = true;
        for (byte b : bytes) {
            blank &= b == 0;
        }
        if (bytes.length != BYTES) {
            return new ChecksummedFields.Problem(bytes.length == 0 ? "it is empty" : "it holds " + bytes.length + " bytes, not "
                    + BYTES, blank, false);
        }
        CRC32C crc = new CRC32C();
        crc.update(bytes, 0, 8);
        if (ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).getInt(8) != (int) crc.getValue()) {
            return new ChecksummedFields.Problem(blank ? "it holds only zeros" : "its CRC32C does not hold", blank, !blank);
        }
        return null;
    }

    private void forceDirectory() throws IOException {
        try (FileChannel channel = FileChannel.open(directory, StandardOpenOption.READ)) {
            channel.force(true);
        }
    }
}
