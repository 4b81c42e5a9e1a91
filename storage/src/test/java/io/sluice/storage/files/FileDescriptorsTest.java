package io.sluice.storage.files;

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
        String warning = FileDescriptors.checkLimit(10_000, 20_000);
        assertTrue(warning != null && warning.contains("limit of this process is 20000"), warning);
        assertTrue(warning.contains("at least 30256"), "3 per queue being written plus 256: " + warning);
        assertTrue(warning.contains("about 6581 queues can be written at once"), warning);
        assertTrue(warning.contains("ulimit -n"), "names the remedy: " + warning);
    }

    @Test
    void aLimitThatSufficesOrIsUnknownIsNotReported() {
        assertNull(FileDescriptors.checkLimit(1_000, 20_000));
        assertNull(FileDescriptors.checkLimit(10_000, -1));
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
