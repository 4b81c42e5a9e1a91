package io.sluice.broker.queue;

import io.sluice.storage.segment.SegmentFiles;

import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** Damages a stored record, as a bad disk would, so that it fails its checksum when read. */
public final class DamagedRecords {
    private DamagedRecords() {
    }

    /**
     * Flips a bit of record {@code id}, found by {@code marker} (bytes of its payload) in its segment under
     * {@code segmentDirectory}, in place: the mapping sees it, nothing is truncated.
     */
    public static void flipAByteOf(Path segmentDirectory, long id, String marker) throws Exception {
        Path segment = segmentDirectory.resolve(SegmentFiles.fileName((int) (id >>> 32)));
        byte[] bytes = Files.readAllBytes(segment);
        byte[] m = marker.getBytes(StandardCharsets.UTF_8);
        int at = -1;
        for (int i = 0; i + m.length <= bytes.length && at < 0; i++) {
            if (Arrays.equals(bytes, i, i + m.length, m, 0, m.length)) {
                at = i;
            }
        }
        assertTrue(at > 0, "marker " + marker + " not found in " + segment);
        try (FileChannel ch = FileChannel.open(segment, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.wrap(new byte[] {(byte) (bytes[at + 3] ^ 0x01)}), at + 3);
        }
    }
}
