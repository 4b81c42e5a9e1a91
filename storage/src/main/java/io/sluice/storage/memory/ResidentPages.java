package io.sluice.storage.memory;

import io.sluice.storage.DeferredPosix;
import net.openhft.posix.MAdviseFlag;
import net.openhft.posix.PosixAPI;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.reflect.Method;
import java.nio.MappedByteBuffer;

/**
 * Drops a range of a shared file mapping from this process's page tables ({@code madvise(MADV_DONTNEED)}):
 * the pages leave the process's RSS but stay in the page cache, dirty ones included (Linux moves a
 * page's dirty bit from the page table to the page when it unmaps it, so writeback and {@code fsync}
 * still write it). The next access to such a page faults it back in from the cache: a minor fault,
 * no I/O. Nothing written is lost and nothing about durability changes; it is how much of what was
 * written the process keeps mapped.
 *
 * <p>Rule "drop only what nobody writes": callers drop only pages that lie wholly behind their file's
 * append position, under the lock that keeps the mapping from being unmapped meanwhile, or holding a
 * reservation of the mapping that does (the drop before a force, {@code WrittenRange}).
 *
 * <p>Switched off with {@code -Dsluice.storage.drop-written-pages=false} (for an A/B), and only the drop before each
 * force with {@code -Dsluice.storage.drop-before-force=false}. Thread-safe.
 */
public final class ResidentPages {
    private static final Logger LOG = LoggerFactory.getLogger(ResidentPages.class);
    private static final long PAGE_BYTES = 4096;
    private static final boolean ENABLED = !"false".equals(System.getProperty("sluice.storage.drop-written-pages"));
    private static final boolean BEFORE_FORCE = ENABLED && !"false".equals(System.getProperty("sluice.storage.drop-before-force"));
    private static final Method DIRECT_ADDRESS = directAddress();
    private static volatile boolean failureLogged;

    private ResidentPages() {
    }

    /** Whether dropping is switched on. */
    public static boolean enabled() {
        return ENABLED;
    }

    /**
     * Whether the pages written since the last force are dropped before each force of a segment (docs/storage.md,
     * "Written pages and the cost of a force"); off with {@code -Dsluice.storage.drop-before-force=false} (for an A/B),
     * and with dropping as a whole.
     */
    public static boolean beforeForce() {
        return BEFORE_FORCE;
    }

    /**
     * Drops the whole pages within {@code [address, address + length)} (the range is shrunk to page
     * boundaries) from this process's mappings. Returns false if nothing was dropped, which it also is just after a
     * start, until Chronicle's POSIX binding has loaded in the background ({@link DeferredPosix#ready()}).
     */
    public static boolean drop(long address, long length) {
        if (!ENABLED || address == 0) {
            return false;
        }
        if (!DeferredPosix.ready()) {
            // Just after a start, before the binding has loaded in the background: the pages stay resident until a
            // later pass rather than the flusher loading the binding under a queue's lock.
            return false;
        }
        long start = (address + PAGE_BYTES - 1) & -PAGE_BYTES;
        long end = (address + length) & -PAGE_BYTES;
        if (end <= start) {
            return false;
        }
        try {
            int result = PosixAPI.posix().madvise(start, end - start, MAdviseFlag.MADV_DONTNEED);
            if (result != 0) {
                logOnce("madvise returned " + result, null);
                return false;
            }
            return true;
        } catch (RuntimeException | LinkageError e) {
            logOnce(e.toString(), e);
            return false;
        }
    }

    /** The address of {@code buffer}'s first byte, or 0 if the JVM does not tell. */
    public static long address(MappedByteBuffer buffer) {
        if (DIRECT_ADDRESS == null) {
            return 0;
        }
        try {
            return (long) DIRECT_ADDRESS.invoke(buffer);
        } catch (ReflectiveOperationException | RuntimeException e) {
            logOnce(e.toString(), e);
            return 0;
        }
    }

    /** {@code sun.nio.ch.DirectBuffer.address()}: exported to the class path by the flags Chronicle needs anyway. */
    private static Method directAddress() {
        try {
            return Class.forName("sun.nio.ch.DirectBuffer").getMethod("address");
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }

    private static void logOnce(String problem, Throwable cause) {
        if (!failureLogged) {
            failureLogged = true;
            LOG.warn("Written pages of mapped files cannot be dropped from memory ({}); the broker's resident memory then "
                    + "grows with what each queue writes, up to its mapping chunks.", problem, cause);
        }
    }
}
