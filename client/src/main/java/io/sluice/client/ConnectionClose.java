package io.sluice.client;

import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The close of one {@link Connection} ({@link Connection#close()}), done once, by the first call, and waited for by
 * every other: the acks batched in its consumers are written first; then the connection counts as closed, and the
 * network thread fails everything in flight and writes CLOSE ({@link Connection#closeOnLoop}); then the network thread
 * and the callbacks stop. Each step is bounded (a second or two, five for the network thread to stop), so a close ends
 * even with a broker that does not answer.
 *
 * <p>Threads: {@link #close} runs on the application's threads, any number at once; the one that takes the close does
 * its work, handing the steps on the network thread to it as tasks. {@link #isClosed} is read on any thread.
 */
final class ConnectionClose {
    /** The connection's logger: applications filter the client's connection lines on it. */
    private static final Logger LOG = LoggerFactory.getLogger(Connection.class);

    private final Connection connection;
    private final EventLoop loop;
    private final EventLoopGroup group;
    private final Callbacks callbacks;
    /** The connection's consumers; read on the network thread only. */
    private final Map<Integer, Consumer> consumers;

    private volatile boolean closed;
    /** Taken by the one close() that closes; any other close() waits for it (see {@link Connection#close()}). */
    private final AtomicBoolean closeTaken = new AtomicBoolean();
    /** Completed once the network thread stopped, by the close() that closes. */
    private final CompletableFuture<Void> networkStopped = new CompletableFuture<>();
    /** Completed once the close is complete (the callbacks stopped too), by the close() that closes. */
    private final CompletableFuture<Void> closeCompleted = new CompletableFuture<>();

    ConnectionClose(Connection connection, EventLoop loop, EventLoopGroup group, Callbacks callbacks,
                    Map<Integer, Consumer> consumers) {
        this.connection = connection;
        this.loop = loop;
        this.group = group;
        this.callbacks = callbacks;
        this.consumers = consumers;
    }

    /** Whether close() got past writing the batched acks: from then on the connection takes no new work. */
    boolean isClosed() {
        return closed;
    }

    /** {@link Connection#close()}, which says what a caller may expect. */
    void close() {
        if (connection.onNetworkThread() && closeTaken.get()) {
            return; // the close under way stops this very thread: waiting here would hold it up
        }
        connection.checkMayBlock("Connection.close");
        if (!closeTaken.compareAndSet(false, true)) {
            // Returning before the closing call finishes would leave its callbacks running after this close().
            awaitUninterruptibly(callbacks.onCallbackThread() ? networkStopped : closeCompleted);
            return;
        }
        try {
            closeOnce();
        } finally {
            networkStopped.complete(null);
            closeCompleted.complete(null);
        }
    }

    /** The work of {@link #close()}, done by the one call that took {@link #closeTaken}. */
    private void closeOnce() {
        writeSettlementsBeforeClosing();
        closed = true;
        CompletableFuture<Void> done = new CompletableFuture<>();
        try {
            loop.execute(() -> connection.closeOnLoop(done));
            done.get(2, TimeUnit.SECONDS);
        } catch (RejectedExecutionException | ExecutionException | TimeoutException e) {
            LOG.debug("Closing the connection to {} did not finish cleanly: {}", connection.address(), e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        networkStopped.complete(null);
        callbacks.shutdown();
    }

    /** Waits for a close made by another call, which is bounded; an interrupt meanwhile is kept for the caller. */
    private static void awaitUninterruptibly(CompletableFuture<Void> closing) {
        boolean interrupted = false;
        while (true) {
            try {
                closing.get();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            } catch (ExecutionException e) {
                break; // not thrown: the closing call completes it only normally
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * The acks the application made before close() may still be batched in their consumers (up to the ack flush
     * delay): each consumer writes them first, waited for up to a second, so that the broker does not deliver those
     * messages again.
     */
    private void writeSettlementsBeforeClosing() {
        CompletableFuture<List<Consumer>> open = new CompletableFuture<>();
        try {
            loop.execute(() -> open.complete(List.copyOf(consumers.values())));
            List<CompletableFuture<Void>> written = new ArrayList<>();
            for (Consumer consumer : open.get(1, TimeUnit.SECONDS)) {
                written.add(consumer.writeSettlements());
            }
            CompletableFuture.allOf(written.toArray(CompletableFuture[]::new)).get(1, TimeUnit.SECONDS);
        } catch (RejectedExecutionException | ExecutionException | TimeoutException e) {
            LOG.debug("Writing the acks batched before closing the connection to {} did not finish: {}",
                    connection.address(), e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
