package io.sluice.client;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertThrows;

/** A {@link Consumer#receive} of 60 s waiting on a thread of its own, for the tests of what ends it. */
final class WaitingReceive {
    private final CompletableFuture<Message> result = new CompletableFuture<>();

    /** Returns once the receive waits in its poll (its thread is TIMED_WAITING). */
    WaitingReceive(Consumer consumer) {
        Thread thread = new Thread(() -> {
            try {
                result.complete(consumer.receive(Duration.ofSeconds(60)));
            } catch (Throwable t) {
                result.completeExceptionally(t);
            }
        }, "waiting-receive");
        thread.setDaemon(true);
        thread.start();
        TestWait.until(() -> thread.getState() == Thread.State.TIMED_WAITING);
    }

    /** What the receive threw; fails unless it ended by throwing within 5 s (not its 60). */
    Throwable thrown() {
        return assertThrows(ExecutionException.class, () -> result.get(5, TimeUnit.SECONDS),
                "the waiting receive must end, by throwing").getCause();
    }
}
