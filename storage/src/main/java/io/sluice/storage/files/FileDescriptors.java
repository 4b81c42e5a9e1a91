package io.sluice.storage.files;

import io.sluice.storage.DurabilityMode;
import io.sluice.storage.StorageFilesExhaustedException;

import java.lang.management.ManagementFactory;
import java.lang.management.OperatingSystemMXBean;

/**
 * What the store's queues need of the process's file descriptors, and what the process may have: its
 * open-file limit ({@code RLIMIT_NOFILE}, the soft limit, which the JVM raises to the hard limit at
 * start), from the JVM's {@code UnixOperatingSystemMXBean}.
 *
 * <p>Descriptors per queue (docs/storage.md, "File descriptors"): a declared queue never appended to
 * holds none (its Chronicle opens at first use); once it has been appended to, it holds 3 (Chronicle's
 * {@code metadata.cq4t} and segment file, and the channel the flusher forces it through), and until the segment's first force
 * the channels that force needs: the metadata file's and the segment directory's, and for the first
 * segment since the store opened the queue's directory and the directory of queues. Under
 * {@code always} and {@code interval} that force closes them (within a flusher turn, or an interval),
 * so a queue being written holds 3; under {@code never} no force comes, and it holds 7 (5 once it has
 * rolled since the store opened). Opening a queue and forcing take a few more for a moment.
 *
 * <p>Thread-safe (stateless).
 */
public final class FileDescriptors {
    /** Held by a declared queue that has not been appended to since the store opened: Chronicle opens at first use. */
    public static final int PER_IDLE_QUEUE = 0;
    /** Held by a queue with a segment being written, once the segment's first force has run. */
    public static final int PER_ACTIVE_QUEUE = 3;
    /** Held by a queue being written under durability {@code never}, whose segments are never forced. */
    public static final int PER_ACTIVE_QUEUE_NEVER = 7;
    /** Left for everything else: the JVM's jars and libraries, sockets, files opened for a moment. */
    public static final int RESERVED = 256;

    private FileDescriptors() {
    }

    /** The process's open-file limit, or -1 if the JVM cannot tell (not a Unix JVM). */
    public static long limit() {
        OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.UnixOperatingSystemMXBean unix) {
            return unix.getMaxFileDescriptorCount();
        }
        return -1;
    }

    /** What a queue being written holds under {@code mode}. */
    public static int perActiveQueue(DurabilityMode mode) {
        return mode == DurabilityMode.NEVER ? PER_ACTIVE_QUEUE_NEVER : PER_ACTIVE_QUEUE;
    }

    /** The open-file limit that {@code queues} queues, every one of them being written under {@code mode}, need. */
    public static long neededFor(long queues, DurabilityMode mode) {
        return queues * perActiveQueue(mode) + RESERVED;
    }

    /** True if {@code e}, or any of its causes, is the operating system refusing to open another file (EMFILE, ENFILE). */
    public static boolean exhausted(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            String message = t.getMessage();
            if (message != null && message.contains("Too many open files")) {
                return true;
            }
        }
        return false;
    }

    /**
     * The error for {@code what} (for example "queue 'orders' cannot open its segment file F") when
     * the process ran out of descriptors: names the limit and the remedy.
     */
    public static StorageFilesExhaustedException exhaustedError(String what, Throwable cause) {
        long limit = limit();
        String limitText = limit < 0 ? "the open-file limit" : "the open-file limit " + limit;
        return new StorageFilesExhaustedException(what + ": too many open files (" + limitText
                + " of this process is reached; each queue being written holds " + PER_ACTIVE_QUEUE + ", "
                + PER_ACTIVE_QUEUE_NEVER + " under durability never); nothing of it is stored, and it works again once files are closed or the limit is raised"
                + " (ulimit -n, systemd LimitNOFILE, docker run --ulimit nofile=N:N)", cause);
    }

    /**
     * For start-up and for each new queue: a warning if {@code limit} is below what {@code queues}
     * queues being written under {@code mode} need, else null.
     */
    public static String checkLimit(long queues, long limit, DurabilityMode mode) {
        long needed = neededFor(queues, mode);
        if (limit < 0 || limit >= needed) {
            return null;
        }
        int perQueue = perActiveQueue(mode);
        long writable = Math.max(0, (limit - RESERVED) / perQueue);
        return "The open-file limit of this process is " + limit + ", and " + queues + " queues need up to "
                + needed + " (" + perQueue + " per queue being written under durability " + mode.configName() + ", "
                + RESERVED + " for the rest): about " + writable + " queues can be written at once, and appends to the "
                + "others will be refused with \"too many open files\". Raise the limit to at least "
                + needed + " (ulimit -n, systemd LimitNOFILE, docker run --ulimit nofile=N:N).";
    }
}
