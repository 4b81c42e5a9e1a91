package io.sluice.broker.queue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
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
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Deleting a queue from whichever thread asks, its own event loop included; declares taken as one group. */
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

    @Test
    void declaresTakenAsOneGroupNeverShareTheLastFreePlace() throws Exception {
        BrokerConfig config = new ConfigLoader().load(null, Map.of());
        EventLoopGroup loop = new DefaultEventLoopGroup(1);
        try (MessageStore store = MessageStore.open(dir, config.storeConfig())) {
            QueueManager queues = new QueueManager(store, loop, config.queues, 1000);
            queues.declare("first", QueueSettings.EMPTY);
            CountDownLatch release = new CountDownLatch(1);
            CompletableFuture<Object> blocker = queues.onDeclareThread(() -> {
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return null;
            });
            // All waiting behind the blocker, so the declare thread takes them as one group.
            List<CompletableFuture<BrokerQueue>> answers = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                answers.add(queues.declareGrouped("q" + i, QueueSettings.EMPTY, 4));
            }
            answers.add(queues.declareGrouped("q0", QueueSettings.EMPTY, 4)); // q0 again: the same queue, no new place
            release.countDown();
            blocker.join();
            int ok = 0;
            for (int i = 0; i < 6; i++) {
                try {
                    answers.get(i).join();
                    ok++;
                } catch (CompletionException e) {
                    assertInstanceOf(io.sluice.broker.error.BrokerException.class, e.getCause());
                    assertEquals(io.sluice.protocol.ErrorCode.RESOURCE_LIMIT, ((io.sluice.broker.error.BrokerException) e.getCause()).code());
                    assertTrue(e.getCause().getMessage().contains("above limits.max-queues 4"), e.getCause().getMessage());
                }
            }
            assertEquals(3, ok, "one queue existed and the limit is 4");
            assertSame(answers.get(0).join(), answers.get(6).join());
            assertEquals(4, queues.all().size());
        } finally {
            loop.shutdownGracefully().syncUninterruptibly();
        }
    }

    @Test
    void aQueueDeclaredWithoutSettingsDoesNotInheritTheFileOfAnEarlierQueueOfItsName() throws Exception {
        BrokerConfig config = new ConfigLoader().load(null, Map.of());
        EventLoopGroup loop = new DefaultEventLoopGroup(1);
        try {
            Files.createDirectories(dir.resolve("queue-settings"));
            // As a crash between deleting a queue's store and its settings file leaves it.
            Files.writeString(dir.resolve("queue-settings").resolve("reused.json"), "{\"maxDeliveries\":2}");
            try (MessageStore store = MessageStore.open(dir, config.storeConfig())) {
                QueueManager queues = new QueueManager(store, loop, config.queues, 1000);
                queues.declare("reused", QueueSettings.EMPTY);
                queues.close();
            }
            try (MessageStore store = MessageStore.open(dir, config.storeConfig())) {
                QueueManager queues = new QueueManager(store, loop, config.queues, 1000);
                assertEquals(config.queues.maxDeliveries, queues.get("reused").options().maxDeliveries());
                queues.close();
            }
        } finally {
            loop.shutdownGracefully().syncUninterruptibly();
        }
    }
}
