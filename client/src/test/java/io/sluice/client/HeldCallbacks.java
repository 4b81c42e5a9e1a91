package io.sluice.client;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;

/**
 * Holds every callback of a connection (handlers, future completions) from {@link #install} until {@link #release()},
 * then hands them to the dispatch pool in order: a test plays a dispatch thread that runs late, behind work the network
 * thread does meanwhile. Installed through reflection, as the client has no such seam and should not grow one for
 * tests. Thread-safe.
 */
final class HeldCallbacks implements Executor {
    private final Executor pool;
    private final List<Runnable> held = new ArrayList<>();
    private boolean holding = true;

    private HeldCallbacks(Executor pool) {
        this.pool = pool;
    }

    /** From now on, the callbacks of {@code connection} wait for {@link #release()}. */
    static HeldCallbacks install(Connection connection) throws ReflectiveOperationException {
        Field callbacksField = Connection.class.getDeclaredField("callbacks");
        callbacksField.setAccessible(true);
        Callbacks callbacks = (Callbacks) callbacksField.get(connection);
        Field executorField = Callbacks.class.getDeclaredField("executor");
        executorField.setAccessible(true);
        HeldCallbacks gate = new HeldCallbacks((Executor) executorField.get(callbacks));
        executorField.set(callbacks, gate);
        return gate;
    }

    @Override
    public void execute(Runnable callback) {
        synchronized (this) {
            if (holding) {
                held.add(callback);
                return;
            }
        }
        pool.execute(callback);
    }

    /** The callbacks held so far. */
    synchronized int heldCount() {
        return held.size();
    }

    /** Runs the held callbacks, and every later one, on the dispatch pool. */
    void release() {
        List<Runnable> due;
        synchronized (this) {
            holding = false;
            due = List.copyOf(held);
            held.clear();
        }
        due.forEach(pool::execute);
    }
}
