package io.sluice.storage.readahead;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The read-ahead thread serves every reader of the store: a mapped fault (the JVM's InternalError for
 * a SIGBUS) in one reader's cursor must fail that cursor's queue and never end the thread, which would
 * stop the read-ahead of every other reader. A real SIGBUS on demand is not reproducible here (Chronicle
 * may grow a file again when it maps it), so the faulting cursor throws what the JVM would.
 */
@Timeout(30)
class ReadAheadTest {
    @Test
    void aFaultingCursorIsToldAndDroppedAndTheThreadGoesOnForTheOthers() throws Exception {
        AtomicReference<InternalError> told = new AtomicReference<>();
        AtomicInteger faultingAdvances = new AtomicInteger();
        CountDownLatch healthyAfterFault = new CountDownLatch(50);
        ReadAhead.Cursor faulting = new ReadAhead.Cursor() {
            @Override
            public int advance(int limit) {
                faultingAdvances.incrementAndGet();
                throw new InternalError("a fault occurred in a recent unsafe memory access operation in compiled Java code");
            }

            @Override
            public void release() {
            }

            @Override
            public void faulted(InternalError e) {
                told.set(e);
            }
        };
        ReadAhead.Cursor healthy = new ReadAhead.Cursor() {
            @Override
            public int advance(int limit) {
                if (told.get() != null) {
                    healthyAfterFault.countDown();
                }
                return 1;
            }

            @Override
            public void release() {
            }

            @Override
            public void faulted(InternalError e) {
                throw new AssertionError("the healthy cursor never faults");
            }
        };
        ReadAhead readAhead = new ReadAhead();
        readAhead.start();
        try {
            readAhead.register("faulting", faulting);
            readAhead.register("healthy", healthy);
            assertTrue(healthyAfterFault.await(20, TimeUnit.SECONDS), "the thread goes on advancing the other cursor");
            assertNotNull(told.get(), "the faulting cursor was told, so that its queue fails safe");
            assertEquals(1, faultingAdvances.get(), "and it is no longer advanced");
        } finally {
            readAhead.close();
        }
    }
}
