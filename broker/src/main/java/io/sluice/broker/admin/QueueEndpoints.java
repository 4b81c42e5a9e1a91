package io.sluice.broker.admin;

import com.fasterxml.jackson.databind.JsonNode;
import io.sluice.broker.Broker;
import io.sluice.broker.auth.Action;
import io.sluice.broker.auth.Authorizer;
import io.sluice.broker.error.ErrorCodes;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.QueueSnapshot;
import io.sluice.broker.queue.Replication;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.BacklogStats;
import io.sluice.storage.QueueDigest;
import io.sluice.storage.StoredMessage;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * The admin API's queue resources ({@link AdminApi} routes to them, method already checked):
 * {@code /api/queues}, {@code /api/queues/{name}} (GET, PUT, DELETE), {@code .../purge}, {@code .../digest},
 * and the queues' users, {@code /api/consumers} and {@code /api/producers}. Each applies rule A2 first, before
 * the queue is looked up, so that a refused user cannot probe which queues exist.
 *
 * <p>Threads: the HTTP thread serving the request, which waits here: for a queue's figures on its event loop
 * (up to {@link #QUEUE_WAIT_MS}), for a declare or delete on the broker's declare thread, and on a cluster node
 * for a delete or purge to be committed and applied (up to {@link #REPLICATED_WAIT_MS}).
 */
final class QueueEndpoints {
    static final long QUEUE_WAIT_MS = 5000;
    /** How long a delete or purge on a cluster node waits to be committed and applied: through an election or two. */
    private static final long REPLICATED_WAIT_MS = 15_000;

    private final Broker broker;
    private final Authorizer authorizer;
    private final AdminJson json;
    private final QueueRates rates;

    QueueEndpoints(Broker broker, AdminJson json, QueueRates rates) {
        this.broker = broker;
        this.authorizer = broker.authorizer();
        this.json = json;
        this.rates = rates;
    }

    /** GET /api/queues: the queues {@code user} may see, each described; one too busy to answer is left out. */
    List<Object> list(String user) {
        List<Object> out = new ArrayList<>();
        visibleQueues(user).forEach(q -> {
            try {
                out.add(describe(q));
            } catch (ApiException e) {
                if (e.status != 503) {
                    throw e;
                }
            }
        });
        return out;
    }

    /** GET /api/queues/{name}: needs any action on the queue. */
    Map<String, Object> describe(String user, String name) {
        permit(user, null, name);
        return describe(queue(name));
    }

    /** GET /api/queues/{name}/digest: needs any action on the queue. */
    Map<String, Object> digest(String user, String name) {
        permit(user, null, name);
        return digest(queue(name));
    }

    /** PUT /api/queues/{name}: needs manage; on a cluster node, through the shard's log on the leader (rule R7). */
    Map<String, Object> declare(String user, String name, byte[] body) {
        permit(user, Action.MANAGE, name);
        Replication replication = requireLeaderIfCluster();
        return replication != null ? declareReplicated(replication, name, parseSettings(body)) : declare(name, body);
    }

    /** DELETE /api/queues/{name}: needs manage. */
    Map<String, Object> delete(String user, String name) {
        permit(user, Action.MANAGE, name);
        return delete(name);
    }

    /** POST /api/queues/{name}/purge: needs manage. */
    Map<String, Object> purge(String user, String name) {
        permit(user, Action.MANAGE, name);
        return purge(name);
    }

    /** GET /api/consumers: the subscriptions to the queues {@code user} may see. */
    List<Object> consumers(String user) {
        List<Object> out = new ArrayList<>();
        for (BrokerQueue q : visibleQueues(user)) {
            for (QueueSnapshot.ConsumerFigures c : snapshot(q).consumers()) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("queue", q.name());
                m.put("connection", c.connection());
                m.put("tag", c.tag());
                m.put("credit", c.credit());
                m.put("unackedMessages", c.unackedMessages());
                out.add(m);
            }
        }
        return out;
    }

    /** GET /api/producers: the producers on the queues {@code user} may see. */
    List<Object> producers(String user) {
        List<Object> out = new ArrayList<>();
        for (BrokerQueue q : visibleQueues(user)) {
            QueueSnapshot s = snapshot(q);
            for (String p : s.producers()) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("connection", p);
                m.put("queue", q.name());
                m.put("flowState", s.flowState().name().toLowerCase());
                out.add(m);
            }
        }
        return out;
    }

    /** Rule A2 for one queue: 403 unless {@code user} may do {@code action} (null: see) on it. */
    private void permit(String user, Action action, String queue) {
        if (action == null ? authorizer.maySee(user, queue) : authorizer.allowed(user, action, queue)) {
            return;
        }
        if (action == null) {
            authorizer.countDenial();
        }
        throw new ApiException(403, "access_denied", action == null ? Authorizer.seeDenial(user, queue)
                : Authorizer.denial(user, action, queue));
    }

    /**
     * The digest of the messages the queue holds on this node ({@link QueueDigest}): equal on every node of a
     * cluster once they applied the same log (docs/replication.md, rule R6). Reads every unacknowledged message.
     */
    private Map<String, Object> digest(BrokerQueue q) {
        QueueDigest digest = QueueDigest.of(q.store());
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("queue", q.name());
        m.put("messages", digest.messages());
        m.put("firstId", digest.firstId());
        m.put("lastId", digest.lastId());
        m.put("sha256", digest.sha256());
        return m;
    }

    private BrokerQueue queue(String name) {
        BrokerQueue q = broker.queues().get(name);
        if (q == null) {
            throw new ApiException(404, "unknown_queue", "queue '" + name + "' does not exist");
        }
        return q;
    }

    private static QueueSnapshot snapshot(BrokerQueue q) {
        io.netty.util.concurrent.Future<QueueSnapshot> f = q.snapshot();
        if (!f.awaitUninterruptibly(QUEUE_WAIT_MS, TimeUnit.MILLISECONDS)) {
            throw new ApiException(503, "queue_busy", "queue '" + q.name() + "' did not answer within " + QUEUE_WAIT_MS + " ms");
        }
        if (!f.isSuccess()) {
            throw new ApiException(503, "queue_busy", "queue '" + q.name() + "' could not report its figures: " + f.cause());
        }
        return f.getNow();
    }

    /** The queues {@code user} may see (rule A2). */
    private List<BrokerQueue> visibleQueues(String user) {
        return broker.queues().all().stream().filter(q -> authorizer.maySee(user, q.name()))
                .sorted(Comparator.comparing(BrokerQueue::name)).toList();
    }

    private Map<String, Object> describe(BrokerQueue q) {
        QueueSnapshot s = snapshot(q);
        BacklogStats stats = q.store().stats();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("name", q.name());
        m.put("backlogMessages", s.backlogMessages());
        m.put("backlogBytes", s.backlogBytes());
        m.put("readyMessages", s.readyMessages());
        m.put("unackedMessages", s.inFlightMessages());
        m.put("consumers", s.consumers().size());
        m.put("producers", s.producers().size());
        m.put("flowState", s.flowState().name().toLowerCase());
        m.put("flowReason", s.flowReason());
        long nowMillis = q.store().nowMillis();
        m.put("oldestUnackedAgeSeconds", oldestUnackedAgeSeconds(q, nowMillis));
        long ready = s.oldestReadyTimestampMillis();
        m.put("oldestReadyAgeSeconds", ready < 0 ? 0 : Math.max(0, nowMillis - ready) / 1000.0);
        m.put("rates", rates.of(q.name()));
        m.put("durability", q.store().durability().configName());
        m.put("segments", stats.segments());
        m.put("diskBytes", stats.diskBytes());
        m.put("pinnedBytes", stats.pinnedBytes());
        m.put("counters", s.counters());
        // PUT's names and formats, every setting: a PUT of them declares a queue that runs as this one (QueueOptions.asSettings)
        m.put("settings", q.options().asSettings().asMap());
        return m;
    }

    /** As the metric of that name: 0 with no message, null when the oldest record cannot be read. */
    private static Double oldestUnackedAgeSeconds(BrokerQueue q, long nowMillis) {
        try {
            long oldest = q.store().oldestUnacked(id -> false, 0);
            StoredMessage m = oldest < 0 ? null : q.store().read(oldest);
            return m == null ? 0.0 : Math.max(0, nowMillis - m.timestampMillis()) / 1000.0;
        } catch (RuntimeException e) {
            return null; // a damaged record or a queue being deleted: unknown, not 0
        }
    }

    private Map<String, Object> declare(String name, byte[] body) {
        QueueSettings settings = parseSettings(body);
        try {
            boolean existed = broker.queues().get(name) != null;
            BrokerQueue q = onDeclareThread(() -> broker.queues().declare(name, settings));
            return declared(q, !existed);
        } catch (RuntimeException e) {
            throw refusal(e);
        }
    }

    /**
     * A cluster leader's declare: checked here as a client's DECLARE is (the name, the settings, an existing queue's
     * settings), then submitted to the shard's log, whose every node creates the queue (rule R7); answered once applied
     * here. A follower never gets here ({@link #requireLeaderIfCluster}).
     */
    private Map<String, Object> declareReplicated(Replication replication, String name, QueueSettings settings) {
        BrokerQueue existing;
        try {
            existing = broker.queues().existing(name, settings);
        } catch (RuntimeException e) {
            throw refusal(e);
        }
        if (existing != null) {
            return declared(existing, false);
        }
        return declared(awaitReplicated(replication.declare(name, settings), "declare of queue '" + name + "'"), true);
    }

    private Map<String, Object> declared(BrokerQueue q, boolean created) {
        Map<String, Object> m = describe(q);
        m.put("created", created);
        return m;
    }

    /** A declare's refusal in the admin API's terms; an unexpected failure stays one (500, logged). */
    private static RuntimeException refusal(RuntimeException e) {
        ErrorCode code = ErrorCodes.of(e);
        if (code == ErrorCode.INTERNAL_ERROR) {
            return e;
        }
        return new ApiException(ErrorCodes.httpStatus(code), ErrorCodes.httpName(code), ErrorCodes.unwrap(e).getMessage());
    }

    /** Declares and deletes go through the broker's declare thread, in line with the connections' ones. */
    private <T> T onDeclareThread(Supplier<T> task) {
        try {
            return broker.queues().onDeclareThread(task).join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException cause) {
                throw cause;
            }
            throw e;
        }
    }

    /**
     * Waits for a change submitted to the shard's log to be applied here; 503 if Raft took longer than
     * {@link #REPLICATED_WAIT_MS} (an election running: the change may still be applied), the failure's own
     * status (409 for NOT_LEADER) if it was refused.
     */
    private static <T> T awaitReplicated(CompletableFuture<T> change, String what) {
        try {
            return change.get(REPLICATED_WAIT_MS, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new ApiException(503, "not_committed", what + " was not committed within " + REPLICATED_WAIT_MS
                    + " ms; it may still be applied, look again before repeating it");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ApiException(503, "interrupted", what + " was interrupted while waiting for the cluster");
        } catch (ExecutionException e) {
            ErrorCode code = ErrorCodes.of(e);
            if (code == ErrorCode.INTERNAL_ERROR) {
                throw new IllegalStateException(what + " failed", e.getCause());
            }
            throw new ApiException(ErrorCodes.httpStatus(code), ErrorCodes.httpName(code), what + " failed: " + e.getCause().getMessage());
        }
    }

    private QueueSettings parseSettings(byte[] body) {
        JsonNode root = json.read(body);
        if (root == null || root.isMissingNode()) {
            return QueueSettings.EMPTY;
        }
        if (!root.isObject()) {
            throw new ApiException(400, "bad_json", "the body must be a JSON object of queue settings, got " + root.getNodeType());
        }
        QueueSettings.Builder b = QueueSettings.builder();
        for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            JsonNode v = e.getValue();
            try {
                if (v.isIntegralNumber() && v.canConvertToLong()) {
                    b.set(e.getKey(), v.longValue());
                } else if (v.isBoolean()) {
                    b.set(e.getKey(), v.booleanValue());
                } else if (v.isTextual()) {
                    b.set(e.getKey(), v.textValue());
                } else {
                    throw new ApiException(400, "invalid_setting", "queue setting '" + e.getKey() + "' is " + v
                            + "; settings are whole numbers, booleans or strings");
                }
            } catch (IllegalArgumentException tooLarge) {
                throw tooLarge(tooLarge);
            }
        }
        try {
            return b.build();
        } catch (IllegalArgumentException tooMany) {
            throw tooLarge(tooMany);
        }
    }

    /** The wire's limits (a string setting's UTF-8 bytes, the number of settings), as a DECLARE frame has them. */
    private static ApiException tooLarge(IllegalArgumentException e) {
        return new ApiException(400, "invalid_setting", e.getMessage());
    }

    /**
     * On a cluster node the change goes through the shard's log (rule R7 of docs/replication.md), so only the
     * leader takes it; a follower answers 409 {@code not_leader} naming the leader's client listener.
     */
    private Replication requireLeaderIfCluster() {
        Replication replication = broker.queues().replication();
        String notLeader = replication == null ? null : replication.notLeader();
        if (notLeader != null) {
            throw new ApiException(409, "not_leader", "this cluster node does not take changes now: " + notLeader);
        }
        return replication;
    }

    private Map<String, Object> delete(String name) {
        Replication replication = requireLeaderIfCluster();
        if (replication != null) {
            if (!awaitReplicated(replication.delete(name), "delete of queue '" + name + "'")) {
                throw new ApiException(404, "unknown_queue", "queue '" + name + "' does not exist");
            }
            return Map.of("deleted", name);
        }
        if (!onDeclareThread(() -> broker.queues().delete(name))) {
            throw new ApiException(404, "unknown_queue", "queue '" + name + "' does not exist");
        }
        return Map.of("deleted", name);
    }

    private Map<String, Object> purge(String name) {
        Replication replication = requireLeaderIfCluster();
        if (replication != null) {
            return Map.of("queue", name, "purgedMessages", awaitReplicated(replication.purge(queue(name)),
                    "purge of queue '" + name + "'"));
        }
        io.netty.util.concurrent.Future<Long> f = queue(name).purge();
        if (!f.awaitUninterruptibly(QUEUE_WAIT_MS, TimeUnit.MILLISECONDS)) {
            throw new ApiException(503, "queue_busy", "purge of queue '" + name + "' did not finish within " + QUEUE_WAIT_MS + " ms");
        }
        if (!f.isSuccess()) {
            // A queue deleted since it was looked up is 404, as if looked up after; a failed store says why (503).
            Throwable cause = f.cause();
            throw cause instanceof RuntimeException e ? refusal(e) : new RuntimeException(cause);
        }
        return Map.of("queue", name, "purgedMessages", f.getNow());
    }
}
