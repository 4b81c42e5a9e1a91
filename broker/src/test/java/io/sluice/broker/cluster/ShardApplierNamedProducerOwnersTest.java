package io.sluice.broker.cluster;

import io.sluice.broker.queue.ClientConnection;
import io.sluice.broker.queue.ProducerRegistry;
import io.sluice.protocol.ProducerIds;
import io.sluice.protocol.ProducerInitFrame;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Rule R11 of docs/replication.md: every node registers each PRODUCER_INIT entry in log order, so grants the same epoch.
 * On a node that did not submit the entry the registration's connection is the replicated log ({@link ReplicaLink}),
 * which never closes, so its owners are never forgotten there; once {@code 2 x queues.dedup-max-producers} named
 * producers ever registered, a follower refuses every further registration the leader (whose owners go with their
 * connections) granted, and as the next leader it refuses those producers' clients.
 */
class ShardApplierNamedProducerOwnersTest extends ShardApplierFixture {
    private static final int SELF = 1;

    @Override
    Map<String, String> settings() {
        return Map.of("queues.dedup-max-producers", "1"); // owners kept at most: 2
    }

    private static byte[] init(int node, long call, String name, int epoch) {
        return ShardEntry.encode(node, call, "orders", new ProducerInitFrame(0, "orders", name, epoch), MAX_FRAME);
    }

    private static final ClientConnection CLIENT = new ClientConnection() {
        @Override
        public void flush() {
        }

        @Override
        public String describe() {
            return "a test client";
        }

        @Override
        public String id() {
            return "client-1";
        }

        @Override
        public boolean isActive() {
            return true;
        }
    };

    @Test
    void aFollowerRegistersEveryProducerTheLeaderGrantedAndServesItAsTheNextLeader() throws Exception {
        Submissions submissions = new Submissions();
        ShardApplier applier = new ShardApplier(queues, submissions, SELF, new FinalizedEntryLevel(EntryLevels.SUPPORTED, null), ownSettings());
        applier.applyLogEntry(declare(1), 10).join();
        // The leader (node 2) registers three named producers one after another, each client gone before the next came:
        // the leader's owners go with their connections, so it grants epochs 1, 2 and 3.
        applier.applyLogEntry(init(OTHER_NODE, 2, "service-a", ProducerInitFrame.NEW_INSTANCE), 11).join();
        applier.applyLogEntry(init(OTHER_NODE, 3, "service-b", ProducerInitFrame.NEW_INSTANCE), 12).join();
        applier.applyLogEntry(init(OTHER_NODE, 4, "service-c", ProducerInitFrame.NEW_INSTANCE), 13).join();

        // The leader fails; this node leads, and service-c's client reconnects and resumes its epoch 3 here (R11).
        CompletableFuture<ProducerRegistry.Registered> answer = new CompletableFuture<>();
        submissions.registration(100, CLIENT, answer);
        applier.applyLogEntry(init(SELF, 100, "service-c", 3), 14).join();

        ProducerRegistry.Registered registered = answer.handle((r, failure) -> {
            if (failure != null) {
                throw new AssertionError("service-c's resume on the new leader failed: " + failure, failure);
            }
            return r;
        }).get(10, TimeUnit.SECONDS);
        assertEquals(3, registered.epoch(), "the epoch every node granted service-c");
    }
}
