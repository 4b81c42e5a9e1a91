package io.sluice.storage;

import io.sluice.storage.memory.ResidentPages;
import net.openhft.posix.MAdviseFlag;
import net.openhft.posix.MSyncFlag;
import net.openhft.posix.PosixAPI;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Chronicle's POSIX binding, deferred from Chronicle's start to its first use ({@link DeferredPosix}): the first call
 * loads it and is answered by it, and once loaded it is what {@link PosixAPI#posix()} returns.
 */
class DeferredPosixTest {
    private static final int PAGE_BYTES = 4096;

    @TempDir
    Path dir;

    @Test
    void theFirstCallLoadsTheBindingAndIsAnsweredByIt() {
        DeferredPosix deferred = new DeferredPosix();
        assertFalse(deferred.isLoaded());

        assertEquals(ProcessHandle.current().pid(), deferred.getpid());
        assertTrue(deferred.isLoaded());
        assertEquals(Runtime.getRuntime().availableProcessors(), deferred.get_nprocs());
    }

    @Test
    void anAsynchronousMsyncIsAnsweredWithoutLoadingTheBindingAndASynchronousOneLoadsIt() throws Exception {
        DeferredPosix deferred = new DeferredPosix();
        try (FileChannel file = FileChannel.open(dir.resolve("synced"), StandardOpenOption.CREATE, StandardOpenOption.READ,
                StandardOpenOption.WRITE)) {
            file.write(ByteBuffer.allocate(PAGE_BYTES), 0);
            MappedByteBuffer mapped = file.map(FileChannel.MapMode.READ_WRITE, 0, PAGE_BYTES);
            mapped.put(0, (byte) 7);
            long address = ResidentPages.address(mapped);

            assertEquals(0, deferred.msync(address, PAGE_BYTES, MSyncFlag.MS_ASYNC));
            assertEquals(0, deferred.msync(address, PAGE_BYTES, MSyncFlag.MS_ASYNC.value()));
            assertFalse(deferred.isLoaded());

            assertEquals(0, deferred.msync(address, PAGE_BYTES, MSyncFlag.MS_SYNC));
            assertTrue(deferred.isLoaded());
            assertEquals(0, deferred.msync(address, PAGE_BYTES, MSyncFlag.MS_ASYNC), "the binding's own answer, once loaded");
        }
    }

    @Test
    void madviseThroughTheDeferredBindingDropsPagesWithoutLosingTheirContent() throws Exception {
        DeferredPosix deferred = new DeferredPosix();
        try (FileChannel file = FileChannel.open(dir.resolve("mapped"), StandardOpenOption.CREATE, StandardOpenOption.READ,
                StandardOpenOption.WRITE)) {
            file.write(ByteBuffer.allocate(4 * PAGE_BYTES), 0);
            MappedByteBuffer mapped = file.map(FileChannel.MapMode.READ_WRITE, 0, 4 * PAGE_BYTES);
            for (int i = 0; i < 4 * PAGE_BYTES; i += 64) {
                mapped.put(i, (byte) (i / 64));
            }
            long address = ResidentPages.address(mapped);
            assertNotEquals(0, address);

            assertEquals(0, deferred.madvise(address, 4 * PAGE_BYTES, MAdviseFlag.MADV_DONTNEED));

            for (int i = 0; i < 4 * PAGE_BYTES; i += 64) {
                assertEquals((byte) (i / 64), mapped.get(i), "byte " + i + " after the pages were dropped");
            }
        }
    }

    @Test
    void onceLoadedTheBindingIsWhatChronicleGets() {
        DeferredPosix.install();
        DeferredPosix.load();

        PosixAPI posix = PosixAPI.posix();
        assertFalse(posix instanceof DeferredPosix, "posix() still returns the deferred API: " + posix);
        assertEquals(ProcessHandle.current().pid(), posix.getpid());
    }
}
