package io.sluice.storage;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Refuses appends before the disk is full, so that a store into a memory-mapped page never meets a
 * filesystem with no block for it (which the JVM would turn into an InternalError from SIGBUS).
 *
 * <p>Rule: an append of {@code n} bytes goes ahead only while free space minus everything written
 * since the last look stays above {@code reservedBytes}. Free space is looked up again after every
 * {@value #RECHECK_BYTES} bytes written, so the cost is one {@code statfs} per 4 MiB, not per message.
 * The margin must exceed what Chronicle may touch beyond the records themselves (its index pages);
 * the default of 256 MiB does with room to spare. Thread-safe.
 */
public final class DiskSpaceGuard {
    static final long RECHECK_BYTES = 4L << 20;

    private final Path directory;
    private final FileStore fileStore;
    private final long reservedBytes;
    /** Bytes that may still be written before free space must be looked up again. */
    private final AtomicLong budget = new AtomicLong();
    private volatile long lastFreeBytes;

    public DiskSpaceGuard(Path directory, long reservedBytes) {
        this.directory = directory;
        this.reservedBytes = reservedBytes;
        try {
            this.fileStore = Files.getFileStore(directory);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot find the filesystem of " + directory, e);
        }
        refresh();
    }

    /** Takes {@code bytes} from the budget, or throws {@link StorageFullException} without writing anything. */
    public void reserve(long bytes) {
        if (budget.addAndGet(-bytes) >= 0) {
            return;
        }
        synchronized (this) {
            if (budget.get() >= 0) {
                return;
            }
            long spendable = refresh();
            if (spendable < bytes) {
                budget.set(0);
                throw new StorageFullException("free disk space " + lastFreeBytes + " bytes on " + directory
                        + " is below the reserved margin of " + reservedBytes + " bytes; append of " + bytes + " bytes refused");
            }
            budget.set(Math.min(spendable, RECHECK_BYTES) - bytes);
        }
    }

    /**
     * As {@link #reserve}, answering instead of throwing: for writes that have another way out (an ack
     * journal that may not grow rotates instead), so that they never eat into the reserve either.
     */
    public boolean tryReserve(long bytes) {
        try {
            reserve(bytes);
            return true;
        } catch (StorageFullException e) {
            return false;
        }
    }

    /**
     * For relocation, which may write into the reserve (that is what the reserve is for) but must leave
     * {@code floorBytes} free: looks up free space now and throws {@link StorageFullException}, without
     * anything written, if writing {@code bytes} would go below the floor.
     */
    public synchronized void reserveWithinMargin(long bytes, long floorBytes) {
        refresh();
        if (lastFreeBytes - bytes < floorBytes) {
            throw new StorageFullException("free disk space " + lastFreeBytes + " bytes on " + directory + " leaves no room to "
                    + "relocate " + bytes + " bytes above the floor of " + floorBytes + " bytes");
        }
    }

    /** Free space minus the reserve, as of the last look. Negative means appends are refused. */
    public long headroomBytes() {
        return lastFreeBytes - reservedBytes;
    }

    public long freeBytes() {
        return lastFreeBytes;
    }

    /** Looks up free space now; returns what may be written before the reserve is reached. */
    public synchronized long refresh() {
        try {
            lastFreeBytes = fileStore.getUsableSpace();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read free space of " + directory, e);
        }
        long spendable = lastFreeBytes - reservedBytes;
        budget.set(Math.max(0, Math.min(spendable, RECHECK_BYTES)));
        return spendable;
    }
}
