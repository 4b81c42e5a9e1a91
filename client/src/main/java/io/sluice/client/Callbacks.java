package io.sluice.client;

import io.netty.channel.EventLoop;
import io.sluice.client.internal.LogThrottle;
import io.sluice.client.internal.NamedThreadFactory;
import io.sluice.client.internal.NetworkThreads;
import io.sluice.client.internal.SerialExecutor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;

/**
 * Where the callbacks of one {@link Connection} run (handlers, flow listeners, completions of the futures
 * the client hands out): a dispatch pool ({@code sluice-client-dispatch-*}) by default, or the network
 * thread with {@link ConnectionOptions#callbacksOnNetworkThread()}, where what a callback throws is logged
 * and goes no further. Thread-safe; {@link #shutdown()} stops the pool.
 *
 * <p>Rule "refused, not lost, not on the network thread": work the pool refuses (it cannot start a thread; it was shut
 * down by close()) still runs, with the outcome it carries: handed over by a network thread, on a thread started for
 * it ({@code sluice-client-dispatch-fallback}), so that application code never runs on the network thread unasked;
 * handed over by any other thread, on that thread. Neither Netty's way (log the refused listener task and
 * drop it: the future's waiters wait for good) nor the JDK's (fail the dependent future with the refusal: a confirmed
 * message or a commit would read as failed) keeps the outcome.
 */
final class Callbacks {
    private static final Logger LOG = LoggerFactory.getLogger(Callbacks.class);
    private static final String POOL_THREAD_PREFIX = "sluice-client-dispatch";
    private static final String FALLBACK_THREAD_NAME = POOL_THREAD_PREFIX + "-fallback";

    /** Null when callbacks run on the network thread. */
    private final ExecutorService pool;
    /** The pool, or the network thread, as {@code executorSeam} gave it back. */
    private final Executor executor;
    private final String address;
    /** Logs the pool's refusals: the first, then at most one a minute. */
    private final LogThrottle refusals = new LogThrottle(Duration.ofMinutes(1), System::nanoTime);

    /**
     * @param executorSeam given the executor callbacks run on (the pool, or the network thread), returns the one they are
     *                     handed to: the same but in tests, which hold them back or refuse them
     *                     ({@link Connection#connect(ConnectionOptions, UnaryOperator)})
     */
    Callbacks(boolean onNetworkThread, EventLoop loop, String address, UnaryOperator<Executor> executorSeam) {
        this.address = address;
        if (onNetworkThread) {
            this.pool = null;
            this.executor = executorSeam.apply(task -> {
                if (loop.inEventLoop()) {
                    runCallback(task);
                } else {
                    loop.execute(() -> runCallback(task));
                }
            });
        } else {
            this.pool = Executors.newCachedThreadPool(new NamedThreadFactory(POOL_THREAD_PREFIX));
            this.executor = executorSeam.apply(pool);
        }
    }

    /** Where callbacks run, as an executor that never throws: what the pool refuses runs by the rule above. */
    Executor executor() {
        return this::handOff;
    }

    /** Runs {@code task} where callbacks run; dropped once the connection is closed. */
    void dispatch(Runnable task) {
        if (pool != null && pool.isShutdown()) {
            LOG.debug("Dropped a callback after the connection to {} closed.", address);
            return;
        }
        handOff(task);
    }

    /** Completes a future where callbacks run, so by default they never run on the network thread. */
    <T> void complete(CompletableFuture<T> future, T value, Throwable failure) {
        handOff(() -> {
            if (failure == null) {
                future.complete(value);
            } else {
                future.completeExceptionally(failure);
            }
        });
    }

    /**
     * A new serial executor where callbacks run, for the futures of one producer: its tasks run one at a time in the
     * order given (a later confirm never overtakes an earlier one whose callbacks still run), many to one hand-off
     * while they keep coming, and, what the pool refuses, by the rule above, so that every future given to it completes.
     */
    SerialExecutor serialCompletions() {
        return new SerialExecutor(this::handOff);
    }

    /** Hands {@code task} to the pool (or the network thread); what it refuses runs by rule "refused, not lost". */
    private void handOff(Runnable task) {
        try {
            executor.execute(task);
        } catch (RuntimeException | Error refused) {
            // RejectedExecutionException; an OutOfMemoryError ("unable to create native thread") from the pool's
            // Thread.start comes out of execute as it is.
            runRefused(task, refused);
        }
    }

    private void runRefused(Runnable task, Throwable refusal) {
        if (pool == null || !NetworkThreads.isCurrent()) {
            task.run(); // callbacks run on the network thread by choice, or the caller is not a network thread
            return;
        }
        long notLogged = refusals.admit();
        if (notLogged >= 0) {
            LOG.warn("The callback pool of the connection to {} refused a task ({}); it runs on a thread of its own"
                    + "{}.", address, refusal.toString(), notLogged == 0 ? "" : " (" + notLogged + " more refused since the last of these lines)");
        }
        try {
            Thread fallback = new Thread(() -> runCallback(task), FALLBACK_THREAD_NAME);
            fallback.setDaemon(true);
            fallback.start();
        } catch (RuntimeException | Error cannotStart) {
            LOG.error("No thread could be started for a callback the pool of the connection to {} refused ({}); it runs on"
                    + " the network thread.", address, cannotStart.toString());
            runCallback(task);
        }
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
     * On the network thread (or a fallback thread): runs a user callback; what it throws is logged and goes no further,
     * so that it cannot reach the channel pipeline, which would close the connection.
     */
    private static void runCallback(Runnable callback) {
        try {
            callback.run();
        } catch (Throwable t) {
            LOG.warn("A callback failed on the network thread; the connection carries on: {}", t.toString(), t);
        }
    }
}
