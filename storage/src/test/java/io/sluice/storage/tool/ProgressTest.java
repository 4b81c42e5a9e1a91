package io.sluice.storage.tool;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The progress line of verify and dump, on a hand-driven clock. */
class ProgressTest {
    private final AtomicLong nanos = new AtomicLong(5_000_000_000L);
    private final ByteArrayOutputStream terminal = new ByteArrayOutputStream();
    private final Progress progress = new Progress(new PrintStream(terminal, true, StandardCharsets.UTF_8), nanos::get);

    private String shown() {
        return terminal.toString(StandardCharsets.UTF_8);
    }

    /** As many calls as it takes to read the clock once. */
    private void records(long upTo) {
        for (long r = upTo - 255; r <= upTo; r++) {
            progress.show("dump of queue 'orders'", r);
        }
    }

    @Test
    void shouldSayNothingDuringTheFirstSecond() {
        records(1000);
        nanos.addAndGet(999_000_000L);
        records(2000);
        assertEquals("", shown());
        progress.done();
        assertEquals("", shown(), "nothing to erase");
    }

    @Test
    void shouldRewriteOneLineAtMostTwiceASecondAndEraseIt() {
        nanos.addAndGet(1_000_000_000L);
        records(123_456);
        assertEquals("\rdump of queue 'orders': 123,456 records, 1 s", shown());
        nanos.addAndGet(100_000_000L);
        records(200_000);
        assertEquals("\rdump of queue 'orders': 123,456 records, 1 s", shown(), "not again within 500 ms");
        nanos.addAndGet(400_000_000L);
        records(300_000);
        assertTrue(shown().endsWith("\rdump of queue 'orders': 300,000 records, 1 s"), shown());
        progress.done();
        String line = "dump of queue 'orders': 300,000 records, 1 s";
        assertTrue(shown().endsWith("\r" + " ".repeat(line.length()) + "\r"), "erased: " + shown());
    }

    @Test
    void shouldBeSilentWhenStandardErrorIsNoTerminal() {
        // the build runs tests with stderr redirected to a file or pipe
        assertEquals(null, Progress.terminalOf(2));
        assertTrue(Progress.onStandardError(true) == Progress.NONE);
    }
}
