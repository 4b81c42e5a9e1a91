package io.sluice.broker.queue;

import io.sluice.broker.TestAwait;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.ref.WeakReference;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The connections named producers registered on, as the queue keeps them (P2): a connection that
 * closed is let go when it closes, not at the next snapshot, which may never come.
 */
class ProducerOwnersTest {
    @TempDir
    Path dir;

    @Test
    void aClosedConnectionsRegistrationsAreDroppedWhenItCloses() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of())) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.EMPTY);
            FakeConnection owner = new FakeConnection("owner");
            WeakReference<FakeConnection> held = new WeakReference<>(owner);
            assertEquals(1, q.producerState().register(owner, 7, -1).get(10, TimeUnit.SECONDS).epoch());
            assertEquals(2, q.producerState().register(owner, 8, -1).get(10, TimeUnit.SECONDS).epoch());
            owner.close();
            q.producerState().connectionClosed(owner); // as the connection's session does when its channel closes
            owner = null;
            TestAwait.until("the queue let go of the closed connection", () -> {
                System.gc();
                return held.get() == null;
            });

            FakeConnection next = new FakeConnection("next");
            assertEquals(1, q.producerState().register(next, 7, 1).get(10, TimeUnit.SECONDS).epoch(),
                    "the newest instance resumes on another connection");
        }
    }
}
