package io.sluice.storage.reclaim;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Rule "a failing pass is counted, and logged sparingly": every failure counted, a run's lines bounded by time. */
class ReclaimFailuresTest {
    private static final long SECOND = 1_000_000_000L;
    private final Logger log = (Logger) LoggerFactory.getLogger(Reclaimer.class);
    private final ListAppender<ILoggingEvent> logged = new ListAppender<>();

    @BeforeEach
    void attach() {
        logged.start();
        log.addAppender(logged);
    }

    @AfterEach
    void detach() {
        log.detachAppender(logged);
    }

    private List<String> lines() {
        return logged.list.stream().map(ILoggingEvent::getFormattedMessage).toList();
    }

    @Test
    void aRunOfFailuresIsLoggedOnceAMinuteAndItsEndOnce() {
        ReclaimFailures failures = new ReclaimFailures("q");
        RuntimeException cause = new IllegalStateException("the ack state cannot be written");
        for (int pass = 0; pass < 600; pass++) { // a minute of passes every 100 ms
            failures.failed(pass * SECOND / 10, cause);
        }
        assertEquals(1, lines().size(), "the first of the run only: " + lines());
        failures.failed(60 * SECOND, cause);
        assertEquals(2, lines().size());
        assertEquals("Reclaim of queue 'q' still fails: 600 passes failed in the last 60 s, the last with "
                + cause + ".", lines().get(1));

        failures.succeeded();
        failures.succeeded();
        assertEquals(3, lines().size(), "the end of the run, once: " + lines());
        assertEquals("Reclaim of queue 'q' works again, after 601 failed passes.", lines().get(2));
        failures.failed(61 * SECOND, cause);
        assertEquals(4, lines().size(), "a new run is logged at its first failure");
        assertEquals(602, failures.count(), "every failure counted");
    }
}
