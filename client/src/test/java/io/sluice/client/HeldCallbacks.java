package io.sluice.client;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;

/**
 * Holds every callback of a connection (handlers, future completions) from {@link #hold()} until {@link #release()},
 * then hands them to the dispatch pool in order: a test plays a dispatch thread that runs late, behind work the network
 * thread does meanwhile. Given to the connection as its callback executor's seam ({@link #around}); until
 * {@link #hold()} it hands each callback on at once, so that the handshake completes. Thread-safe.
 */
final class HeldCallbacks implements Executor {
    private volatile Executor pool;
    private final List<Runnable> held = new ArrayList<>();
    private boolean holding;

    /** The seam's function ({@link FakeBroker#connectReconnecting(java.util.function.UnaryOperator)}): wraps the pool. */
    Executor around(Executor dispatchPool) {
        this.pool = dispatchPool;
        return this;
    }

    /** From now on, the callbacks wait for {@link #release()}. */
    synchronized void hold() {
        holding = true;
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
