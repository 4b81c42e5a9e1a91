package io.sluice.client.internal;

import java.util.ArrayDeque;
import java.util.Queue;
import java.util.concurrent.Executor;

/**
 * Runs tasks one at a time, in submission order, on a shared executor, so each consumer's handler sees its
 * messages in order without owning a thread. A task that throws is logged; the ones behind it still run. A delegate
 * that refuses the drain throws out of {@link #execute}; the task stays queued and the next call tries again.
 * Thread-safe.
 */
public final class SerialExecutor implements Executor {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(SerialExecutor.class);
    private final Executor delegate;
    private final Queue<Runnable> tasks = new ArrayDeque<>();
    private boolean running;
    /** The thread running {@link #drain()}, while one does. */
    private volatile Thread drainer;

    public SerialExecutor(Executor delegate) {
        this.delegate = delegate;
    }

    @Override
    public void execute(Runnable task) {
        synchronized (tasks) {
            tasks.add(task);
            if (running) {
                return;
            }
            running = true;
        }
        try {
            delegate.execute(this::drain);
        } catch (RuntimeException | Error refused) {
            // Nothing drains: the next execute must start a drain again, or every later task would wait for good.
            synchronized (tasks) {
                running = false;
            }
            throw refused;
        }
    }

    /** Whether the calling thread is running this executor's tasks: a wait there for a later task never ends. */
    public boolean drainingOnCurrentThread() {
        return drainer == Thread.currentThread();
    }

    private void drain() {
        Thread outer = drainer; // an inline delegate may drain within a drain of the same thread
        drainer = Thread.currentThread();
        try {
            drainTasks();
        } finally {
            drainer = outer;
        }
    }

    private void drainTasks() {
        while (true) {
            Runnable task;
            synchronized (tasks) {
                task = tasks.poll();
                if (task == null) {
                    running = false;
                    return;
                }
            }
            try {
                task.run();
            } catch (Throwable t) {
                // A failing task must not stop the ones queued behind it (nor, inline, reach the caller's thread).
                LOG.warn("A callback failed: {}", t.toString(), t);
            }
        }
    }
}
