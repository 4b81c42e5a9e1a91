package io.sluice.broker.queue;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.channel.DefaultEventLoopGroup;
import io.netty.channel.EventLoopGroup;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.config.ConfigLoader;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.MessageStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Deleting a queue from whichever thread asks, its own event loop included. */
class QueueManagerTest {
    @TempDir
    Path dir;

    @Test
    void deletingAQueueFromItsOwnEventLoopClosesItBeforeItsFilesGo() throws Exception {
        BrokerConfig config = new ConfigLoader().load(null, Map.of());
        EventLoopGroup loop = new DefaultEventLoopGroup(1); // every connection shares the queue's loop
        try (MessageStore store = MessageStore.open(dir, config.storeConfig())) {
            QueueManager queues = new QueueManager(store, loop, config.queues, 1000);
            BrokerQueue q = queues.declare("doomed", QueueSettings.EMPTY);
            // As a DELETE frame from a connection on the queue's loop runs it.
            boolean[] closedWhenDeleteReturned = new boolean[1];
            boolean deleted = q.executor().submit(() -> {
                boolean result = queues.delete("doomed");
                closedWhenDeleteReturned[0] = q.isClosed();
                return result;
            }).get();
            assertTrue(deleted);
            assertTrue(closedWhenDeleteReturned[0], "the queue is closed before delete returns, not by a task left behind");
            assertNull(queues.get("doomed"));
            assertFalse(Files.exists(dir.resolve("queues").resolve("doomed")));
        } finally {
            loop.shutdownGracefully().syncUninterruptibly();
        }
    }
}
