package io.sluice.broker.metrics;

import io.netty.channel.DefaultEventLoopGroup;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.util.concurrent.GlobalEventExecutor;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.config.ConfigLoader;
import io.sluice.broker.queue.QueueManager;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.MessageStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A deleted queue's meters go with it, whether or not anything scrapes: they held the deleted queue
 * (its figures, its store) for as long as the broker ran when only a scrape removed them, so a broker
 * nobody scraped grew by every queue ever declared.
 */
class QueueMetersLifetimeTest {
    @TempDir
    Path dir;

    @Test
    void aDeletedQueuesMetersAreRemovedWithoutAScrape() throws Exception {
        BrokerConfig config = new ConfigLoader().load(null, Map.of());
        EventLoopGroup loop = new DefaultEventLoopGroup(1);
        BrokerMetrics metrics = new BrokerMetrics(System::currentTimeMillis);
        try (MessageStore store = MessageStore.open(dir, config.storeConfig())) {
            QueueManager queues = new QueueManager(store, loop, config.queues, 1000);
            metrics.bind(queues, store, new DefaultChannelGroup(GlobalEventExecutor.INSTANCE), new NetworkCounters(), 0, () -> true);
            queues.declare("kept", QueueSettings.EMPTY);
            int perQueue = metrics.seriesCountOf("kept");
            assertTrue(perQueue > 0, "a queue has meters");
            for (int i = 0; i < 20; i++) {
                queues.declare("churn-" + i, QueueSettings.EMPTY);
                assertEquals(perQueue, metrics.seriesCountOf("churn-" + i));
                assertTrue(queues.delete("churn-" + i));
                assertEquals(0, metrics.seriesCountOf("churn-" + i), "the meters of deleted queue churn-" + i);
            }
            assertEquals(perQueue, metrics.seriesCountOf("kept"), "the live queue keeps its meters");
            assertTrue(queues.delete("kept"));
            assertEquals(0, metrics.seriesCountOf("kept"));
            queues.declare("kept", QueueSettings.EMPTY); // a queue of the same name again gets meters of its own
            assertEquals(perQueue, metrics.seriesCountOf("kept"));
            queues.close();
        } finally {
            metrics.close();
            loop.shutdownGracefully().syncUninterruptibly();
        }
    }
}
