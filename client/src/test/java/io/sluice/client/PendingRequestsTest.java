package io.sluice.client;

import io.netty.channel.DefaultEventLoop;
import io.sluice.protocol.Frame;
import io.sluice.protocol.FrameType;
import io.sluice.protocol.OkFrame;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * A request's outcome is handed over by a completer, on the network thread: one that throws (a defect, or a dispatch
 * pool that cannot start a thread) fails the request with what it threw. Thrown on, a timeout's exception would go to
 * Netty's log, an answer's or a loss's to the pipeline, and the request, removed already, would never complete: its
 * caller would wait for good, or until a timeout of its own.
 */
class PendingRequestsTest {
    private static final long BOUND_MS = 5_000;

    private final DefaultEventLoop loop = new DefaultEventLoop();
    private final IllegalStateException defect = new IllegalStateException("a defect in completing a request");
    private final PendingRequests requests = new PendingRequests(loop, (future, answer, failure) -> {
        throw defect;
    });

    @AfterEach
    void stop() {
        loop.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }

    @Test
    void aTimeoutWhoseCompleterThrowsFailsTheRequestWithWhatItThrew() {
        CompletableFuture<Frame> declare = new CompletableFuture<>();
        loop.execute(() -> requests.add(requests.nextId(), FrameType.DECLARE_QUEUE, "DECLARE_QUEUE orders", declare, 1, "127.0.0.1:7672"));
        assertSame(defect, failureOf(declare));
    }

    @Test
    void anAnswerWhoseCompleterThrowsFailsTheRequestWithWhatItThrew() {
        CompletableFuture<Frame> declare = new CompletableFuture<>();
        loop.execute(() -> {
            long requestId = requests.nextId();
            requests.add(requestId, FrameType.DECLARE_QUEUE, "DECLARE_QUEUE orders", declare, 60_000, "127.0.0.1:7672");
            requests.answered(requestId, new OkFrame(requestId, 0));
        });
        assertSame(defect, failureOf(declare));
    }

    @Test
    void aLossWhoseCompleterThrowsFailsEveryRequestWithWhatItThrew() {
        List<CompletableFuture<Frame>> declares = List.of(new CompletableFuture<>(), new CompletableFuture<>());
        loop.execute(() -> {
            declares.forEach(declare -> requests.add(requests.nextId(), FrameType.DECLARE_QUEUE, "DECLARE_QUEUE orders", declare, 60_000, "127.0.0.1:7672"));
            requests.failAll(new ConnectionLostException("connection to 127.0.0.1:7672 was lost"));
        });
        declares.forEach(declare -> assertSame(defect, failureOf(declare)));
    }

    private static Throwable failureOf(CompletableFuture<?> call) {
        return assertThrows(ExecutionException.class, () -> call.get(BOUND_MS, TimeUnit.MILLISECONDS)).getCause();
    }
}
