package io.sluice.storage;

import net.openhft.affinity.Affinity;
import net.openhft.affinity.impl.NullAffinity;
import net.openhft.chronicle.core.threads.CleaningThread;
import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The build leaves JNA out (the root pom: it served only Chronicle's affinity library, whose start-up use of it cost
 * a restart a native library's extraction and a child process). Chronicle's affinity library then uses its no-op
 * implementation, and Chronicle's own threads, which ask it for their affinity when they start, still run.
 */
class ChronicleWithoutJnaTest {
    @Test
    void jnaIsNotOnTheClasspath() {
        assertThrows(ClassNotFoundException.class, () -> Class.forName("com.sun.jna.Native"));
    }

    @Test
    void chroniclesThreadsRunWithTheNoOpAffinity() throws InterruptedException {
        assertSame(NullAffinity.INSTANCE, Affinity.getAffinityImpl());
        AtomicBoolean ran = new AtomicBoolean();
        CleaningThread thread = new CleaningThread(() -> ran.set(true), "chronicle-without-jna");
        thread.start();
        thread.join(TimeUnit.SECONDS.toMillis(30));
        assertFalse(thread.isAlive(), "the thread ended");
        assertTrue(ran.get(), "the thread ran its work");
    }
}
