package io.sluice.broker.cluster;

import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.DefaultEventLoopGroup;
import io.netty.channel.EventLoopGroup;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.config.ConfigLoader;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.QueueManager;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.PublishFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.MessageStore;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/** A node's queues in a temporary store, for tests of {@link ShardApplier}, and the entries of another node they apply. */
abstract class ShardApplierFixture {
    static final int MAX_FRAME = 1 << 20;
    static final int OTHER_NODE = 2;

    @TempDir
    Path dir;
    private final EventLoopGroup loop = new DefaultEventLoopGroup(1);
    private final BrokerConfig config = new ConfigLoader().load(null, settings());
    /** Added to the wall clock the node's store reads: a test moves time on by raising it. */
    final AtomicLong clockOffsetMillis = new AtomicLong();
    private MessageStore store;
    QueueManager queues;

    /** The node's settings besides the embedded defaults. */
    Map<String, String> settings() {
        return Map.of();
    }

    @BeforeEach
    void openQueues() {
        store = MessageStore.open(dir.resolve("node"), config.storeConfig(), () -> System.currentTimeMillis() + clockOffsetMillis.get());
        queues = new QueueManager(store, loop, config.queues, 1000, config.broker.publishWindowBytes,
                QueueManager.Role.CLUSTER_NODE);
    }

    @AfterEach
    void closeQueues() {
        queues.close();
        store.close();
        loop.shutdownGracefully(0, 0, TimeUnit.SECONDS).syncUninterruptibly();
    }

    /** Closes the queues and their store and opens them again from disk, as a restart of the node does. */
    void reopenQueues() {
        queues.close();
        store.close();
        openQueues();
    }

    /** An applier of node 1 supporting entry levels up to {@code supportedLevel}. */
    ShardApplier applier(int supportedLevel) {
        return new ShardApplier(queues, new Submissions(), 1, new FinalizedEntryLevel(supportedLevel, null), ownSettings());
    }

    /** This node's settings that every node must share, none recorded for the cluster yet, kept in memory. */
    ClusterSettings ownSettings() {
        return new ClusterSettings(ClusterSettings.Values.of(config), null);
    }

    static byte[] declare(long call) {
        return ShardEntry.encode(OTHER_NODE, call, "orders", new DeclareQueueFrame(0, "orders", QueueSettings.EMPTY), MAX_FRAME);
    }

    /** A PUBLISH to "orders" of {@code producer}'s sequences {@code fromSequence} to {@code toSequence}, payloads "producer:sequence". */
    static byte[] publish(long call, int producer, int fromSequence, int toSequence) {
        PublishFrameBuilder builder = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, "orders");
        for (int sequence = fromSequence; sequence <= toSequence; sequence++) {
            builder.add(producer, sequence, List.of(), (producer + ":" + sequence).getBytes(StandardCharsets.UTF_8));
        }
        PublishFrame frame = builder.build();
        try {
            return ShardEntry.encode(OTHER_NODE, call, "orders", frame, MAX_FRAME);
        } finally {
            frame.release();
        }
    }

    /** The stored messages' payloads, in id order. */
    static List<String> stored(BrokerQueue queue) {
        List<String> payloads = new ArrayList<>();
        queue.store().forEachRecordAfter(-1, (id, codec) -> payloads.add(
                new String(codec.array(), codec.payloadOffset(), codec.payloadLength(), StandardCharsets.UTF_8)));
        return payloads;
    }
}
