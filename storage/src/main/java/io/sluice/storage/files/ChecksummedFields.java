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
        if (content.length != bytes) {
            return null;
        }
        ByteBuffer buffer = ByteBuffer.wrap(content).order(ByteOrder.LITTLE_ENDIAN);
        CRC32C crc = new CRC32C();
        crc.update(content, 0, bytes - 4);
        if (buffer.getInt(0) != magic || buffer.getInt(4) != version || buffer.getInt(bytes - 4) != (int) crc.getValue()) {
            return null;
        }
        return buffer;
    }

    /** Ends {@code buffer}, holding the magic, version and fields up to its last 4 bytes, with their checksum. */
    public static void seal(ByteBuffer buffer, CRC32C crc) {
        int end = buffer.capacity() - 4;
        crc.reset();
        crc.update(buffer.array(), buffer.arrayOffset(), end);
        buffer.putInt(end, (int) crc.getValue());
    }
}
