package io.sluice.storage.segment;

import net.openhft.chronicle.queue.impl.TableStore;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueue;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueueBuilder;
import net.openhft.chronicle.queue.impl.single.TableStoreWriteLock;
import net.openhft.chronicle.queue.impl.table.AbstractTSQueueLock;
import net.openhft.chronicle.queue.impl.table.Metadata;
import net.openhft.chronicle.queue.impl.table.SingleTableBuilder;
import net.openhft.chronicle.threads.BusyTimedPauser;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Releases, before Chronicle opens a queue's segments, the locks in its {@code metadata.cq4t} that a
 * writer killed inside an append left held.
 *
 * <p>Chronicle records a lock's holder as a PID only. At open it releases a lock whose holder has no
 * {@code /proc/<pid>}; otherwise the first append waits out the lock timeout (15 s) and then forces
 * the lock if the holder has died meanwhile, or throws, for every append after it too, if a process
 * with that PID is alive. The holder's PID is still there when the killed writer is a zombie its
 * parent has not reaped yet, when the PID was reused, and when it is this process's own PID: a broker
 * that is PID 1 of its container is PID 1 again after a restart.
 *
 * <p>Releasing is safe because of {@code store.lock}: the store opens segments only while it holds
 * that lock (flock), and every process that writes segments opens them through a store, so no other
 * process can be writing; nor can this one, which opens each queue's segments once. A lock found held
 * at open is therefore left by a writer that is gone, whatever its PID now names. Only the document it
 * had begun is lost, and that document was never complete, so never visible and never confirmed: the
 * next append overwrites it.
 */
final class StaleWriteLocks {
    private static final Logger LOG = LoggerFactory.getLogger(StaleWriteLocks.class);
    /** Chronicle's key of the write lock (private in {@link TableStoreWriteLock}, which uses it by default). */
    static final String WRITE_LOCK_KEY = "chronicle.write.lock";

    static {
        // metadata.cq4t names its header's class by alias; Chronicle registers the aliases when its
        // builder class loads, which may not have happened yet in this process.
        SingleChronicleQueueBuilder.addAliases();
    }

    private StaleWriteLocks() {
    }

    /**
     * Releases the write and append locks of the queue in {@code segmentDirectory} if they are held.
     * Call only with the store's {@code store.lock} held and before Chronicle opens the directory.
     */
    static void release(String queueName, Path segmentDirectory) {
        Path metadata = segmentDirectory.resolve(SingleChronicleQueue.QUEUE_METADATA_FILE);
        if (!Files.exists(metadata)) {
            return;
        }
        try (TableStore<?> store = SingleTableBuilder.binary(metadata.toFile(), Metadata.NoMeta.INSTANCE).readOnly(false).build()) {
            release(queueName, metadata, store, WRITE_LOCK_KEY);
            release(queueName, metadata, store, TableStoreWriteLock.APPEND_LOCK_KEY);
        } catch (RuntimeException e) {
            // Chronicle's own check at open still runs after this; what it cannot release shows up
            // as its lock timeout on the first append.
            LOG.warn("Queue '{}': could not check the locks in {} for a dead holder: {}", queueName, metadata, e.toString());
        }
    }

    private static void release(String queueName, Path metadata, TableStore<?> store, String key) {
        TableStoreWriteLock lock = new TableStoreWriteLock(store, BusyTimedPauser::new, 0L, key);
        try {
            long holder = lock.lockedBy();
            if (holder == AbstractTSQueueLock.UNLOCKED) {
                return;
            }
            int pid = (int) holder; // the high bits carry a thread id when chronicle.store.lock.thread is set
            LOG.warn("Queue '{}': {} in {} was held at open by PID {} ({}); released it, no writer can hold it while this"
                    + " store holds store.lock. The document that writer had begun was never complete and is overwritten.",
                    queueName, key, metadata, pid, describe(pid));
            // Chronicle's own release (one log line) when the holder is gone, its manual unlock otherwise.
            if (!lock.forceUnlockIfProcessIsDead()) {
                lock.forceUnlock();
            }
        } finally {
            lock.close();
        }
    }

    /**
     * After an append that failed inside Chronicle (it could not create or open the segment file):
     * Chronicle took the queue's write lock for that append and does not release it when the file
     * cannot be had, so the next appender would wait out the lock timeout (15 s) on the caller's
     * thread, and then fail. Releases it. Safe for the reason in the class comment, and because every
     * append to the queue runs under its owner's lock, which the caller holds: no append is under way.
     */
    static void releaseAfterFailedAppend(String queueName, SingleChronicleQueue chronicle) {
        try {
            Method writeLock = SingleChronicleQueue.class.getDeclaredMethod("writeLock");
            writeLock.setAccessible(true);
            Object lock = writeLock.invoke(chronicle);
            if (lock instanceof TableStoreWriteLock held && held.locked()) {
                held.unlock(); // held under this process's PID: released without Chronicle's warning and stack trace
                if (held.locked()) {
                    held.forceUnlock();
                }
            }
        } catch (ReflectiveOperationException | RuntimeException e) {
            LOG.warn("Queue '{}': could not release the write lock after a failed append: {}", queueName, e.toString());
        }
    }

    /** What PID {@code pid} names now, for the log. */
    private static String describe(long pid) {
        if (pid == ProcessHandle.current().pid()) {
            return "this process's own PID, so a previous process with the same PID, as PID 1 of a container is";
        }
        Path stat = Path.of("/proc", Long.toString(pid), "stat");
        try {
            String text = Files.readString(stat);
            if (text.substring(text.lastIndexOf(')') + 2).startsWith("Z")) {
                return "exited, not yet reaped by its parent";
            }
            return "now another running process: the PID was reused";
        } catch (IOException | RuntimeException e) {
            return "no longer running";
        }
    }
}
