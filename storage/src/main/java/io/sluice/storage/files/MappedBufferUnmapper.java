package io.sluice.storage.files;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.MappedByteBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Releases a file mapping now instead of when the garbage collector gets round to it, so that a
 * rotated ack journal's 8 MiB of address space and its file handle, or a closed queue's forced mark, do not linger.
 *
 * <p>How: {@code sun.misc.Unsafe#invokeCleaner}, found by reflection. {@code sun.misc} lives in the
 * {@code jdk.unsupported} module, which exports and opens it to everyone, so no JVM flag is needed.
 * If it is unavailable (another JVM), the mapping is left to the garbage collector: the caller has
 * already dropped every reference, which is all correctness needs.
 *
 * <p>Touching a buffer after it is unmapped crashes the JVM, so callers null their field and refuse
 * further use <em>before</em> calling {@link #unmap}. Thread-safe (stateless after class init).
 */
public final class MappedBufferUnmapper {
    private static final Logger LOG = LoggerFactory.getLogger(MappedBufferUnmapper.class);
    private static final Object UNSAFE;
    private static final Method INVOKE_CLEANER;

    static {
        Object unsafe = null;
        Method invokeCleaner = null;
        try {
            Class<?> unsafeClass = Class.forName("sun.misc.Unsafe");
            Field field = unsafeClass.getDeclaredField("theUnsafe");
            field.setAccessible(true);
            unsafe = field.get(null);
            invokeCleaner = unsafeClass.getMethod("invokeCleaner", java.nio.ByteBuffer.class);
        } catch (ReflectiveOperationException | RuntimeException e) {
            LOG.info("Memory-mapped files (ack journals, forced marks) will be released by the garbage collector, not on close ({}).", e.toString());
        }
        UNSAFE = unsafe;
        INVOKE_CLEANER = invokeCleaner;
    }

    private MappedBufferUnmapper() {
    }

    /**
     * Does nothing; calling it loads and initialises this class. A class that unmaps on close calls it from its own
     * static initialiser, so that a close after the process ran out of file descriptors need not read a class file.
     */
    public static void load() {
    }

    public static void unmap(MappedByteBuffer buffer) {
        if (INVOKE_CLEANER == null) {
            return;
        }
        try {
            INVOKE_CLEANER.invoke(UNSAFE, buffer);
        } catch (ReflectiveOperationException | RuntimeException e) {
            LOG.warn("Could not release a memory-mapped file; the garbage collector will ({}).", e.toString());
        }
    }
}
