package io.sluice.client;

import io.netty.channel.EventLoop;
import io.sluice.client.internal.NamedThreadFactory;
import io.sluice.client.internal.SerialExecutor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * Where the callbacks of one {@link Connection} run (handlers, flow listeners, completions of the futures
 * the client hands out): a dispatch pool ({@code sluice-client-dispatch-*}) by default, or the network
 * thread with {@link ConnectionOptions#callbacksOnNetworkThread()}, where what a callback throws is logged
 * and goes no further. Thread-safe; {@link #shutdown()} stops the pool.
 */
final class Callbacks {
    private static final Logger LOG = LoggerFactory.getLogger(Callbacks.class);
    private static final String POOL_THREAD_PREFIX = "sluice-client-dispatch";

    /** Null when callbacks run on the network thread. */
    private final ExecutorService pool;
    private final Executor executor;
    private final String address;

    Callbacks(boolean onNetworkThread, EventLoop loop, String address) {
        this.address = address;
        if (onNetworkThread) {
            this.pool = null;
            this.executor = task -> {
                if (loop.inEventLoop()) {
                    runCallback(task);
                } else {
                    loop.execute(() -> runCallback(task));
                }
            };
        } else {
            this.pool = Executors.newCachedThreadPool(new NamedThreadFactory(POOL_THREAD_PREFIX));
            this.executor = pool;
        }
    }

    /** The dispatch pool, or the network thread; it throws {@link RejectedExecutionException} once closed. */
    Executor executor() {
        return executor;
    }

    /** Runs {@code task} where callbacks run; dropped once the connection is closed. */
    void dispatch(Runnable task) {
        try {
            executor.execute(task);
        } catch (RejectedExecutionException e) {
            LOG.debug("Dropped a callback after the connection to {} closed.", address);
        }
    }

    /** Completes a future where callbacks run, so by default they never run on the network thread. */
    <T> void complete(CompletableFuture<T> future, T value, Throwable failure) {
        Runnable completion = () -> {
            if (failure == null) {
                future.complete(value);
            } else {
                future.completeExceptionally(failure);
            }
        };
        try {
            executor.execute(completion);
        } catch (RejectedExecutionException e) {
            completion.run();
        }
    }

    /**
     * A new serial executor where callbacks run, for the futures of one producer: its tasks run one at a time in the
     * order given (a later confirm never overtakes an earlier one whose callbacks still run), many to one hand-off
     * while they keep coming, and, once the pool has shut down, on the calling thread, as {@link #complete} does, so
     * that every future given to it completes.
     */
    SerialExecutor serialCompletions() {
        return new SerialExecutor(task -> {
            try {
                executor.execute(task);
            } catch (RejectedExecutionException e) {
                task.run();
            }
        });
    }

    /** Whether the calling thread is a dispatch thread (of any connection), running a callback. */
    boolean onCallbackThread() {
        return Thread.currentThread().getName().startsWith(POOL_THREAD_PREFIX);
    }

    /** Stops the pool, waiting up to 5 s for its callbacks unless called from one of them. */
    void shutdown() {
        if (pool == null) {
            return;
        }
        pool.shutdown();
        if (!onCallbackThread()) {
            try {
                if (!pool.awaitTermination(5, TimeUnit.SECONDS)) {
                    pool.shutdownNow();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * On the network thread: runs a user callback; what it throws is logged and goes no further, so that it
     * cannot reach the channel pipeline, which would close the connection.
     */
    private static void runCallback(Runnable callback) {
        try {
            callback.run();
        } catch (Throwable t) {
            LOG.warn("A callback failed on the network thread; the connection carries on: {}", t.toString(), t);
        }
    }
}
