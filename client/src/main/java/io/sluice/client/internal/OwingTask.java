package io.sluice.client.internal;

import org.slf4j.Logger;

import java.util.function.Consumer;

/**
 * Work for a client's network thread (a Netty event loop) that owes someone an outcome: a request's timeout owes its
 * future a failure, a handshake's timer the handshake, a reconnect the next attempt, a retry its consumer or producer.
 * Netty logs what a task throws ("A task raised an exception") and drops it, so whoever waits for that outcome waits
 * until its own timeout, if it has one, or for good; a reconnect that threw was the last. Run as an {@code OwingTask},
 * what the work throws is logged once at WARN, naming the work, and handed to what fails the outcome owed.
 *
 * <p>Immutable; the work and what it owes run on the thread that runs the task.
 */
public final class OwingTask implements Runnable {
    private final Logger log;
    private final String what;
    private final String consequence;
    private final Consumer<Throwable> owed;
    private final Runnable work;

    /**
     * @param what        the work, for the log: "the retry of SUBSCRIBE orders"
     * @param consequence what {@code owed} does, for the log: "the consumer ends with the exception"
     * @param owed        fails what the work owes with what it threw
     */
    public OwingTask(Logger log, String what, String consequence, Consumer<Throwable> owed, Runnable work) {
        this.log = log;
        this.what = what;
        this.consequence = consequence;
        this.owed = owed;
        this.work = work;
    }

    @Override
    public void run() {
        run(log, what, consequence, owed, work);
    }

    /**
     * Runs {@code work} now; if it throws, {@code owed} gets the exception (what {@code owed} throws in turn is added to
     * it as suppressed), and {@code log} says at WARN that {@code what} threw, and {@code consequence}.
     */
    public static void run(Logger log, String what, String consequence, Consumer<Throwable> owed, Runnable work) {
        try {
            work.run();
        } catch (RuntimeException | Error e) {
            try {
                owed.accept(e);
            } catch (RuntimeException | Error also) {
                e.addSuppressed(also);
            }
            log.warn("On the network thread, {} threw; {}: {}", what, consequence, e.toString(), e);
        }
    }
}
