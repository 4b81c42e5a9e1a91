package io.sluice.broker.cluster;

import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.DefaultEventLoopGroup;
import io.netty.channel.EventLoopGroup;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.config.ConfigLoader;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.QueueManager;
import io.sluice.broker.queue.Replication.TransactionPart;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.PublishFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.MessageStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rule R2 of docs/replication.md: whether a node applies a committed entry never depends on its own limits. The leader
 * admitted it under its limits; a node with a lower {@code broker.max-frame-bytes} or {@code storage.max-message-bytes}
 * stores it all the same, and one whose store cannot hold a message at all stops applying instead of skipping it.
 */
class ShardApplierNodeLimitsTest {
    private static final int LEADER = 3;
    /** What the leader's defaults admit: broker.max-frame-bytes 8 MiB, storage.max-message-bytes 4 MiB. */
    private static final int LEADER_MAX_FRAME = 8 << 20;
    private static final int LARGE = 70_000;

    @TempDir
    Path dir;

    /** One node: its own settings, store, queues and applier. */
    private static final class Node implements AutoCloseable {
        private final EventLoopGroup loop = new DefaultEventLoopGroup(1);
        private final MessageStore store;
        final QueueManager queues;
        final ShardApplier applier;

        Node(Path dir, Map<String, String> settings) {
            BrokerConfig config = new ConfigLoader().load(null, settings);
            store = MessageStore.open(dir, config.storeConfig(), System::currentTimeMillis);
            queues = new QueueManager(store, loop, config.queues, 1000, config.broker.publishWindowBytes, QueueManager.Role.CLUSTER_NODE);
            applier = new ShardApplier(queues, new Submissions(), 1, new FinalizedEntryLevel(EntryLevels.SUPPORTED, null),
                    new ClusterSettings(ClusterSettings.Values.of(config), null));
        }

        void apply(byte[] entry, long index) {
            applier.applyLogEntry(entry, index).join();
        }

        /** Each unacknowledged message of {@code queue} as "id=payload length:first payload byte", in id order. */
        List<String> stored(String queue) {
            List<String> out = new ArrayList<>();
            BrokerQueue q = queues.get(queue);
            q.store().forEachUnacked(id -> {
                byte[] payload = q.store().read(id).payloadBytes();
                out.add(id + "=" + payload.length + ":" + (char) payload[0]);
            });
            return out;
        }

        @Override
        public void close() {
            queues.close();
            store.close();
            loop.shutdownGracefully(0, 0, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    private static byte[] declare(String queue) {
        return ShardEntry.encode(LEADER, 1, queue, new DeclareQueueFrame(0, queue, QueueSettings.EMPTY), LEADER_MAX_FRAME);
    }

    /** A PUBLISH to "orders" of producer 7's {@code payloads}, sequences from {@code fromSequence}, as the leader encodes it. */
    private static byte[] publish(int fromSequence, byte[]... payloads) {
        PublishFrameBuilder builder = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, "orders");
        for (int i = 0; i < payloads.length; i++) {
            builder.add(7, fromSequence + i, List.of(), payloads[i]);
        }
        PublishFrame frame = builder.build();
        try {
            return ShardEntry.encode(LEADER, 2, "orders", frame, LEADER_MAX_FRAME);
        } finally {
            frame.release();
        }
    }

    private static byte[] payload(char c, int bytes) {
        return String.valueOf(c).repeat(bytes).getBytes(StandardCharsets.US_ASCII);
    }

    @Test
    void aCommittedPublishIsStoredAlikeOnNodesWhoseFrameAndMessageLimitsDiffer() {
        try (Node leader = new Node(dir.resolve("leader"), Map.of());
             Node lowFrame = new Node(dir.resolve("low-frame"),
                     Map.of("broker.max-frame-bytes", "65536", "storage.max-message-bytes", "64512"));
             Node lowMessage = new Node(dir.resolve("low-message"), Map.of("storage.max-message-bytes", "65536"))) {
            byte[] transaction = TransactionEntry.encode(LEADER, 9, 77, List.of(new TransactionPart("invoices",
                    List.of(new byte[0], new byte[0]), List.of(payload('t', LARGE), payload('u', 10)), List.of())));
            for (Node node : List.of(leader, lowFrame, lowMessage)) {
                node.apply(declare("orders"), 1);
                node.apply(declare("invoices"), 2);
                node.apply(publish(1, payload('x', LARGE)), 3);
                node.apply(EntryBatch.encode(List.of(publish(2, payload('s', 5)), publish(3, payload('y', LARGE)))), 4);
                node.apply(transaction, 5);
            }
            List<String> orders = leader.stored("orders");
            assertEquals(List.of("=70000:x", "=5:s", "=70000:y"), orders.stream().map(s -> s.substring(s.indexOf('='))).toList());
            List<String> invoices = leader.stored("invoices");
            assertEquals(List.of("=70000:t", "=10:u"), invoices.stream().map(s -> s.substring(s.indexOf('='))).toList());
            for (Node node : List.of(lowFrame, lowMessage)) {
                assertEquals(orders, node.stored("orders"), "the same messages under the same ids");
                assertEquals(invoices, node.stored("invoices"), "the same messages under the same ids");
            }
        }
    }

    /** segment-bytes 1 MiB: Chronicle's block is 2 MiB (sized for a quarter of the segment), so a record holds 512 KiB less its header. */
    @Test
    void aNodeWhoseStoreCannotHoldACommittedMessageStopsAtItAndAppliesNothingOfIt() {
        try (Node small = new Node(dir.resolve("small"), Map.of("storage.segment-bytes", "1048576",
                "storage.max-message-bytes", "65536"))) {
            int storable = (512 << 10) - 48;
            small.apply(declare("orders"), 1);
            small.apply(publish(1, payload('a', storable)), 2); // the largest it can hold, above its max-message-bytes
            byte[] batch = EntryBatch.encode(List.of(publish(2, payload('b', 5)), publish(3, payload('c', storable + 1))));

            EntryNotStorable stopped = assertThrows(EntryNotStorable.class, () -> small.apply(batch, 3));
            assertEquals("log entry 3 holds a message of " + (storable + 1) + " bytes (headers plus payload) for queue 'orders', "
                    + "above the " + storable + " bytes a record of this node's store can hold (a quarter of Chronicle's block, "
                    + "sized from storage.segment-bytes and storage.max-message-bytes, less the record's header); this node stops applying the log instead "
                    + "of skipping it: give it the storage.segment-bytes and storage.max-message-bytes of the other nodes and start it again", stopped.getMessage());
            List<String> stored = small.stored("orders");
            assertEquals(1, stored.size(), "nothing of the log entry it stopped at, its first PUBLISH included: " + stored);
            assertTrue(stored.get(0).endsWith("=" + storable + ":a"), stored.get(0));

            byte[] transaction = TransactionEntry.encode(LEADER, 9, 78, List.of(new TransactionPart("orders",
                    List.of(new byte[0]), List.of(payload('d', storable + 1)), List.of())));
            assertThrows(EntryNotStorable.class, () -> small.apply(transaction, 4));
            assertEquals(stored, small.stored("orders"));
        }
    }
}
