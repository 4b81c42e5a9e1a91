package io.sluice.storage.files;

import io.sluice.storage.DurabilityMode;
import org.junit.jupiter.api.Test;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FileDescriptorsTest {
    @Test
    void aLimitBelowWhatTheQueuesNeedIsReportedWithTheFigureToRaiseItTo() {
        for (DurabilityMode mode : new DurabilityMode[] {DurabilityMode.ALWAYS, DurabilityMode.INTERVAL}) {
            String warning = FileDescriptors.checkLimit(10_000, 20_000, mode);
            assertTrue(warning != null && warning.contains("limit of this process is 20000"), warning);
            assertTrue(warning.contains("at least 30256"), "3 per queue being written plus 256: " + warning);
            assertTrue(warning.contains("about 6581 queues can be written at once"), warning);
            assertTrue(warning.contains("ulimit -n"), "names the remedy: " + warning);
        }
    }

    /** Under never a queue being written holds 7 (SegmentDescriptorsTest counts them), and the warning says so. */
    @Test
    void underNeverTheWarningCountsSevenDescriptorsPerQueueBeingWritten() {
        String warning = FileDescriptors.checkLimit(10_000, 40_000, DurabilityMode.NEVER);
        assertTrue(warning != null && warning.contains("at least 70256"), "7 per queue being written plus 256: " + warning);
        assertTrue(warning.contains("7 per queue being written under durability never"), warning);
        assertTrue(warning.contains("about 5677 queues can be written at once"), warning);
        assertNull(FileDescriptors.checkLimit(10_000, 40_000, DurabilityMode.ALWAYS), "3 per queue: 30256 suffice");
    }

    @Test
    void aLimitThatSufficesOrIsUnknownIsNotReported() {
        assertNull(FileDescriptors.checkLimit(1_000, 20_000, DurabilityMode.NEVER));
        assertNull(FileDescriptors.checkLimit(10_000, -1, DurabilityMode.NEVER));
    }

    @Test
    void runningOutOfDescriptorsIsToldApartFromOtherFailures() {
        assertTrue(FileDescriptors.exhausted(new UncheckedIOException("cannot prepare",
                new FileNotFoundException("/d/q/segments/19700101-000000.cq4 (Too many open files)"))));
        assertTrue(FileDescriptors.exhausted(new IOException("Too many open files in system")));
        assertFalse(FileDescriptors.exhausted(new IOException("No space left on device")));
    }

    @Test
    void theJvmReportsTheLimitTheProcessRunsUnder() throws IOException {
        long open;
        try (Stream<Path> descriptors = Files.list(Path.of("/proc/self/fd"))) {
            open = descriptors.count();
        }
        assertTrue(FileDescriptors.limit() >= open, "the limit " + FileDescriptors.limit() + ", open now " + open);
    }
}
