package io.sluice.storage.tool;

import io.sluice.storage.segment.SegmentFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A fault of a mapped read that the JVM raises at a later safepoint reaches verify's queue-level catch with no file
 * attached (SegmentCutShortInItsHeaderTest met it about once in a dozen runs): the report then names the segment files
 * a fault can come from, those whose size is not a whole number of pages, which Chronicle's files always are.
 */
class FilesCutOffThePageTest {
    @TempDir
    Path dir;

    @Test
    void namesTheSegmentFilesWhoseSizeIsNotWholePagesAndNoOther() throws Exception {
        Path cut = sized(SegmentFiles.file(dir, 0), 1_000);
        sized(SegmentFiles.file(dir, 1), 65_536);
        sized(dir.resolve("metadata.cq4t"), 1_000); // not a segment
        List<String> named = StoreVerifier.filesCutOffThePage(dir);
        assertEquals(1, named.size(), named.toString());
        assertTrue(named.get(0).contains(cut.toString()) && named.get(0).contains("cut short")
                && named.get(0).contains("1000 bytes"), named.get(0));
        assertEquals(List.of(), StoreVerifier.filesCutOffThePage(dir.resolve("absent")));
    }

    private static Path sized(Path file, long bytes) throws Exception {
        Files.createDirectories(file.getParent());
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.setLength(bytes);
        }
        return file;
    }
}
