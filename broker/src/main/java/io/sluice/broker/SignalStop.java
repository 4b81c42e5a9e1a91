package io.sluice.broker;

import java.io.PrintStream;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The broker's stop when it is asked to end: done once, by whichever asks first, SIGTERM's handler
 * ({@link #stopThenExit}) or the JVM's shutdown hook (SIGINT, SIGHUP, an exit of any other cause). It waits for a
 * start in progress to end, closes the broker, and gives the exit status that says how that went: 0 once it closed
 * cleanly or none was started (the stop came before the start), 1 when it could not (the start did not end in time, the
 * close failed, or the start itself failed).
 *
 * <p>SIGTERM is handled rather than left to the JVM, whose handler exits with 143 whatever the hooks did: a service
 * manager reads 143 as a failure (systemd marks the unit failed and, with {@code Restart=on-failure}, starts it
 * again), and a container runtime shows the stop as an error. Calling {@code Runtime.halt(0)} from the hook after the
 * close would set the status too, but would cut short any other hook still running (logback's, the JDK's
 * delete-on-exit), so the handler stops the broker first and then calls {@code System.exit} with the status.
 */
final class SignalStop {
    private final CompletableFuture<Broker> started;
    private final long startWaitSeconds;
    private final PrintStream err;
    private final AtomicBoolean begun = new AtomicBoolean();
    private final CountDownLatch stopped = new CountDownLatch(1);
    private volatile int status = 1;

    /**
     * @param started          completed with the broker once it started, exceptionally if its start failed, with null
     *                         if no broker was started (the stop came before the start, or the configuration was refused)
     * @param startWaitSeconds how long a stop waits for a start in progress before it gives up closing
     */
    SignalStop(CompletableFuture<Broker> started, long startWaitSeconds, PrintStream err) {
        this.started = started;
        this.startWaitSeconds = startWaitSeconds;
        this.err = err;
    }

    /** SIGTERM's action: the stop, then the exit with its status (the hooks that run then find the broker closed). */
    void stopThenExit() {
        System.exit(stop());
    }

    /** Stops the broker, once; a second caller waits for the first's stop. Returns the exit status it calls for. */
    int stop() {
        if (!begun.compareAndSet(false, true)) {
            awaitStopped();
            return status;
        }
        err.println("sluice: stopping (signal received)");
        int result = 1;
        try {
            Broker running = started.get(startWaitSeconds, TimeUnit.SECONDS);
            if (running != null) {
                running.close();
            }
            result = 0;
        } catch (TimeoutException e) {
            err.println("sluice: the start did not end within " + startWaitSeconds
                    + " s of the signal; stopping without closing the store (the next start recovers it)");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException e) {
            // the start failed and said so; nothing to close
        } catch (RuntimeException e) {
            err.println("sluice: the broker did not close cleanly: " + e);
            e.printStackTrace(err);
        } finally {
            status = result;
            err.println("sluice: stopped");
            stopped.countDown();
        }
        return result;
    }

    /** Whether a stop has begun: a start not yet begun is then not to begin. */
    boolean stopping() {
        return begun.get();
    }

    /** Waits until a stop has ended, for at most {@code millis}; true if one has. */
    boolean awaitStopped(long millis) throws InterruptedException {
        return stopped.await(millis, TimeUnit.MILLISECONDS);
    }

    /** The exit status of the stop that ended: 0 if the broker closed cleanly. */
    int status() {
        return status;
    }

    private void awaitStopped() {
        try {
            stopped.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
