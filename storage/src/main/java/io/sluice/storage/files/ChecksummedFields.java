package io.sluice.storage.files;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.zip.CRC32C;

/**
 * A small file of fixed fields, little-endian: a magic number (int), a format version (int), the fields, and a CRC32C
 * of every byte before it (int). The store's hints are kept so (a sealed segment's tally, a queue's forced mark): a
 * reader takes one only if it is whole, and otherwise does the work the hint would have saved.
 *
 * <p>Stateless; thread-safe.
 */
public final class ChecksummedFields {
    private static final Logger LOG = LoggerFactory.getLogger(ChecksummedFields.class);
    /** The magic, the version and the checksum. */
    public static final int OVERHEAD_BYTES = 4 + 4 + 4;

    private ChecksummedFields() {
    }

    /**
     * The file's bytes, as a little-endian buffer whose fields start at offset 8, if it is {@code bytes} long, has this
     * magic and version and its checksum holds; null if it is missing, unreadable (logged at debug level, with
     * {@code otherwise}: what the reader does instead), of another length, or damaged.
     */
    public static ByteBuffer read(Path file, int bytes, int magic, int version, String otherwise) {
        byte[] content;
        try {
            content = Files.readAllBytes(file);
        } catch (NoSuchFileException missing) {
            return null;
        } catch (IOException e) {
            LOG.debug("{} cannot be read ({}); {}", file, e.toString(), otherwise);
            return null;
        }
        return problem(content, bytes, magic, version) == null ? ByteBuffer.wrap(content).order(ByteOrder.LITTLE_ENDIAN) : null;
    }

    /**
     * Why a present file does not check out. {@code blank}: it is empty or holds only zeros, what a machine crash leaves
     * of a file whose name reached the disk and whose data did not. {@code checksumOnly}: its size, magic and version
     * are right and only its checksum fails, what a read racing a rewrite in place, or a torn write, leaves.
     */
    public record Problem(String description, boolean blank, boolean checksumOnly) {
        Problem(String description, boolean blank) {
            this(description, blank, false);
        }
    }

    /** Why {@code file} does not check out, or null if it is missing or whole. */
    public static Problem problem(Path file, int bytes, int magic, int version) throws IOException {
        try {
            return problem(Files.readAllBytes(file), bytes, magic, version);
        } catch (NoSuchFileException missing) {
            return null;
        }
    }

    private static Problem problem(byte[] content, int bytes, int magic, int version) {
        boolean blank = true;
        for (byte b : content) {
            blank &= b == 0;
        }
        if (content.length != bytes) {
            return new Problem(content.length == 0 ? "it is empty" : "it holds " + content.length + " bytes, not " + bytes, blank);
        }
        ByteBuffer buffer = ByteBuffer.wrap(content).order(ByteOrder.LITTLE_ENDIAN);
        if (buffer.getInt(0) != magic || buffer.getInt(4) != version) {
            return new Problem(blank ? "it holds only zeros" : String.format("its magic and version are 0x%08x %d, not 0x%08x %d",
                    buffer.getInt(0), buffer.getInt(4), magic, version), blank);
        }
        CRC32C crc = new CRC32C();
        crc.update(content, 0, bytes - 4);
        return buffer.getInt(bytes - 4) == (int) crc.getValue() ? null : new Problem("its checksum does not hold", false, true);
    }

    /** Ends {@code buffer}, holding the magic, version and fields up to its last 4 bytes, with their checksum. */
    public static void seal(ByteBuffer buffer, CRC32C crc) {
        int end = buffer.capacity() - 4;
        crc.reset();
        crc.update(buffer.array(), buffer.arrayOffset(), end);
        buffer.putInt(end, (int) crc.getValue());
    }
}
