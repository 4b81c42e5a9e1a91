package io.sluice.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.ResourceLeakDetector;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Asks Netty's leak detector (paranoid in the surefire configuration) to report buffers that were garbage
 * collected without being released, and fails if it reported any, or if anything else logged an ERROR.
 */
final class LeakCheck {
    private LeakCheck() {
    }

    private static final List<ByteBuf> REGISTERED = new ArrayList<>();

    /** Remembers a buffer the test allocated and handed to the code under test, which must release it. */
    static synchronized void register(ByteBuf buffer) {
        REGISTERED.add(buffer);
    }

    /** Fails if a registered buffer is still referenced; call after releasing every decoded frame. */
    static synchronized void assertRegisteredReleased() {
        try {
            for (ByteBuf buffer : REGISTERED) {
                assertEquals(0, buffer.refCnt(), "a buffer the test allocated was not released");
            }
        } finally {
            REGISTERED.clear();
        }
    }

    static void assertNoLeaksOrErrors() {
        assertRegisteredReleased();
        if (ResourceLeakDetector.getLevel() == ResourceLeakDetector.Level.PARANOID) {
            for (int round = 0; round < 3; round++) {
                System.gc();
                System.runFinalization();
                ByteBuf probe = ByteBufAllocator.DEFAULT.buffer(1);
                probe.release();
            }
        }
        List<String> errors = ErrorLogRecorder.drain();
        assertEquals(List.of(), errors, "ERROR lines (Netty leak reports among them) were logged");
    }
}
