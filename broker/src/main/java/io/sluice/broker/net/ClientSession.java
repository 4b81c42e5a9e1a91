package io.sluice.broker.net;

import io.sluice.broker.log.Printable;
import io.sluice.broker.auth.Action;
import io.sluice.broker.auth.Authorizer;
import io.sluice.broker.error.ErrorCodes;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.ConnectionCredit;
import io.sluice.broker.queue.QueueManager;
import io.sluice.broker.queue.Subscription;
import io.sluice.broker.security.ConnectionLimits;
import io.sluice.broker.txn.ConnectionTransactions;
import io.sluice.protocol.AckFrame;
import io.sluice.protocol.CreditFrame;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.DeleteQueueFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.NackFrame;
import io.sluice.protocol.ProducerIds;
import io.sluice.protocol.ProducerInitFrame;
import io.sluice.protocol.ProducerOkFrame;
import io.sluice.protocol.PublishCursor;
import io.sluice.protocol.PublishFrame;
import io.sluice.protocol.PurgeQueueFrame;
import io.sluice.protocol.SubscribeFrame;
import io.sluice.protocol.TxAbortedFrame;
import io.sluice.protocol.TxAckFrame;
import io.sluice.protocol.TxBeginFrame;
import io.sluice.protocol.TxCommitFrame;
import io.sluice.protocol.TxPublishFrame;
import io.sluice.protocol.TxRollbackFrame;
import io.sluice.protocol.UnsubscribeFrame;
import io.sluice.storage.QueueNames;
import org.slf4j.Logger;

import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * One open connection's state and what its frames do: its subscriptions, what its user may do,
 * its limits (consumers, unacknowledged messages, queues) and its publish window, and the calls
 * into the queues its frames name. Confined to the connection's event loop. Queue work goes to the
 * queue's executor, one task per frame ({@link BrokerQueue#publish}, {@link Subscription}); declares
 * and deletes go to the declare thread, and the frames after them wait in the {@link InboundGate}.
 *
 * <p>Errors: an operation that fails on its own (unknown queue, unknown consumer, bad setting) gets
 * an ERROR and the connection stays usable. Security: every frame that names a queue is checked by
 * the {@link Authorizer} (PUBLISH needs publish, SUBSCRIBE consume, DECLARE/DELETE/PURGE manage); a
 * denial is an ACCESS_DENIED answer and the connection stays usable. Limits over
 * {@code limits.max-queues}, {@code limits.max-consumers-per-connection} or
 * {@code limits.max-unacked-per-connection} answer RESOURCE_LIMIT with an ERROR only.
 *
 * <p>Unacked bound: the connection's {@link ConnectionCredit} counts the credit granted by SUBSCRIBE
 * and CREDIT minus the messages the queues settled (ACK, NACK) or took back from a consumer that
 * left; a delivered, unacked message keeps its unit. The queues grant and settle, each on its
 * executor, in frame order.
 */
final class ClientSession {
    private static final Logger LOG = ProtocolHandler.LOG;

    private final QueueManager queues;
    private final ConnectionSecurity security;
    private final String user;
    private final ClientSessionProxy proxy;
    private final PublishWindow window;
    /** W2: what the connection's unsettled publishes hold, headers and payload, whatever unit its window counts. */
    private final HeldPublishBytes held;
    private final InboundGate gate;
    /** Reports a failure of the broker on this connection: the connection's exceptionCaught. */
    private final Consumer<Throwable> failure;
    private final Map<Integer, Subscription> subscriptions = new HashMap<>();
    /** The connection's transactions; null only in tests that serve none. */
    private final ConnectionTransactions transactions;
    /** The queues named producers registered on through this connection: told when it closes, so they let it go. */
    private final Set<BrokerQueue> producerQueues = Collections.newSetFromMap(new IdentityHashMap<>());
    /** Credit granted minus messages settled, over every consumer; made at the first SUBSCRIBE. */
    private ConnectionCredit unackedBound;
    /** Whether reading was paused for {@link #held} before: the first pause is told at INFO, the others at DEBUG. */
    private boolean pausedForHeldBefore;

    ClientSession(QueueManager queues, ConnectionTransactions transactions, ConnectionSecurity security, String user,
                  ClientSessionProxy proxy, PublishWindow window, HeldPublishBytes held, InboundGate gate,
                  Consumer<Throwable> failure) {
        this.queues = queues;
        this.transactions = transactions;
        this.security = security;
        this.user = user;
        this.proxy = proxy;
        this.window = window;
        this.held = held;
        this.gate = gate;
        this.failure = failure;
    }

    private ConnectionLimits limits() {
        return security.limits();
    }

    // ------------------------------------------------------------------ producing

    /**
     * Takes the frame's messages from the publish window (W1) and the connection's held bytes (W2) and hands the frame
     * to its queue, or refuses it here. A client that is now past its window or that bound finds reading paused (H2).
     * Returns true if the frame's buffer went to a queue, which releases it.
     */
    boolean publish(PublishFrame publish) {
        long messageBytes = publish.messageBytes();
        window.take(publish.messageCount(), window.bytesOf(publish, messageBytes));
        held.take(messageBytes);
        boolean handedOff = false;
        BrokerQueue queue = null;
        // One PUBLISH_ERROR per message, each with the sentence: it names the queue as a queue name can be, never the
        // 64 KiB a string may hold (one frame of 24-byte messages under such a name made gigabytes of answers).
        if (!security.authorizer().allowed(user, Action.PUBLISH, publish.queue())) {
            proxy.refuseAll(publish, ErrorCode.ACCESS_DENIED, Authorizer.denial(user, Action.PUBLISH, shown(publish.queue())));
        } else if ((queue = queues.get(publish.queue())) == null) {
            proxy.refuseAll(publish, ErrorCode.UNKNOWN_QUEUE, "queue '" + shown(publish.queue()) + "' does not exist; declare it first");
        } else if (queues.replication() != null && withoutProducerIdentity(publish)) {
            proxy.refuseAll(publish, ErrorCode.NOT_REPLICATED, notReplicated("messages without a producer id and sequence "
                    + "(a restarted node replays its log, and only those keep a replay from storing a message twice)"));
        } else if (queues.replication() != null) {
            queues.replication().publish(queue, proxy, publish); // stored on every node once committed
            handedOff = true;
        } else {
            queue.publish(proxy, publish);
            handedOff = true;
        }
        pauseIfPastTheWindow();
        return handedOff;
    }

    /** H2: reading pauses while the client is past its window (W1) or its publishes hold more than the bound (W2). */
    private void pauseIfPastTheWindow() {
        if (!window.within()) {
            if (gate.pauseForWindow()) {
                queues.publishPauseLog().warn(LOG, "Client {} sent {} messages / {} bytes beyond its publish window; reading "
                        + "paused until it is back within.", Printable.escaped(proxy.describe()), window.messagesOut(), window.bytesOut());
            }
        } else if (!held.within() && gate.pauseForWindow()) {
            // Not the client's fault: one that counts its window in payload bytes cannot know what its headers hold here.
            String sentence = "Client {} has {} bytes of headers and payload published and not yet confirmed, more than the {} "
                    + "of broker.publish-window-bytes (it counts its publish window in payload bytes); reading paused until "
                    + "enough is confirmed.";
            if (pausedForHeldBefore) {
                LOG.debug(sentence, proxy.describe(), held.bytes(), held.maxBytes());
            } else {
                pausedForHeldBefore = true;
                queues.publishPauseLog().info(LOG, sentence + " Later pauses of this connection are logged at DEBUG.",
                        Printable.escaped(proxy.describe()), held.bytes(), held.maxBytes());
            }
        }
    }

    /** A queue name as a refusal repeated per message shows it: whole up to the longest name a queue may have, else cut. */
    static String shown(String queue) {
        if (queue.length() <= QueueNames.MAX_LENGTH) {
            return queue;
        }
        int end = Character.isHighSurrogate(queue.charAt(QueueNames.MAX_LENGTH - 1)) ? QueueNames.MAX_LENGTH - 1 : QueueNames.MAX_LENGTH;
        return queue.substring(0, end) + "...(" + queue.length() + " characters; a queue name has at most " + QueueNames.MAX_LENGTH + ")";
    }

    /**
     * True if a message of the frame has producer id 0 or sequence 0, which the producer table does not track:
     * replayed after a restart (docs/replication.md, rule R4) it would be stored twice, so a cluster refuses it.
     */
    private static boolean withoutProducerIdentity(PublishFrame publish) {
        PublishCursor cursor = publish.cursor();
        while (cursor.next()) {
            if (cursor.producerId() == 0 || cursor.sequence() < 1) {
                return true;
            }
        }
        return false;
    }

    // ------------------------------------------------------------------ transactions

    void txBegin(TxBeginFrame begin) {
        String refused = queues.replication() == null ? null : queues.replication().transactionsRefused();
        if (refused != null) { // rule R13 of docs/replication.md: a cluster below the entry level its transactions need
            proxy.answer(new TxAbortedFrame(begin.txnId(), ErrorCode.NOT_REPLICATED, refused));
        } else if (transactionsServed("TX_BEGIN")) {
            transactions.begin(begin.txnId(), begin.timeoutMs());
        }
    }

    /**
     * TX_PUBLISH: takes the publish window and the held bytes as PUBLISH does (W1, W2); the coordinator stages the messages and
     * gives it back. Returns true if the frame went to the coordinator, which releases it.
     */
    boolean txPublish(TxPublishFrame frame) {
        PublishFrame publish = frame.publish();
        if (publish.messageCount() == 0) {
            // Nothing to stage: not an operation of the transaction. Each would be kept until the transaction ends, so a
            // client could grow a transaction's memory without bound by frames its caps never count.
            return false;
        }
        long messageBytes = publish.messageBytes();
        long bytes = window.bytesOf(publish, messageBytes);
        window.take(publish.messageCount(), bytes);
        held.take(messageBytes);
        boolean handedOff = false;
        BrokerQueue queue = null;
        if (!transactionsServed("TX_PUBLISH")) {
            proxy.publishCredit(publish.messageCount(), bytes, messageBytes);
        } else if (!security.authorizer().allowed(user, Action.PUBLISH, publish.queue())) {
            proxy.publishCredit(publish.messageCount(), bytes, messageBytes);
            transactions.refuse(frame.txnId(), "TX_PUBLISH", ErrorCode.ACCESS_DENIED, Authorizer.denial(user, Action.PUBLISH, publish.queue()));
        } else if ((queue = queues.get(publish.queue())) == null) {
            proxy.publishCredit(publish.messageCount(), bytes, messageBytes);
            transactions.refuse(frame.txnId(), "TX_PUBLISH", ErrorCode.UNKNOWN_QUEUE, "queue '" + publish.queue()
                    + "' does not exist; declare it first");
        } else {
            transactions.publish(frame.txnId(), queue, publish, bytes, messageBytes);
            handedOff = true;
        }
        proxy.flush();
        pauseIfPastTheWindow();
        return handedOff;
    }

    /** TX_ACK: the queue takes the deliveries off the consumer in order with its other frames (D1); the transaction holds them. */
    void txAck(TxAckFrame ack) {
        if (!transactionsServed("TX_ACK") || ack.messageIds().isEmpty()) {
            return; // no ranges: nothing to hold, and no operation to keep (as an empty TX_PUBLISH)
        }
        Subscription sub = subscriptions.get(ack.consumerTag());
        if (sub == null) {
            transactions.refuse(ack.txnId(), "TX_ACK", ErrorCode.UNKNOWN_CONSUMER, "no subscription on this connection has consumer tag "
                    + ack.consumerTag());
            return;
        }
        transactions.ack(ack.txnId(), sub.hold(ack.messageIds()));
    }

    void txCommit(TxCommitFrame commit) {
        if (transactionsServed("TX_COMMIT")) {
            transactions.commit(commit.requestId(), commit.txnId());
        }
    }

    void txRollback(TxRollbackFrame rollback) {
        if (transactionsServed("TX_ROLLBACK")) {
            transactions.rollback(rollback.requestId(), rollback.txnId());
        }
    }

    private boolean transactionsServed(String frame) {
        if (transactions == null) {
            proxy.answerError(0, ErrorCode.UNKNOWN_TRANSACTION, frame + ": this listener serves no transactions");
        }
        return transactions != null;
    }

    // ------------------------------------------------------------------ consuming

    void subscribe(SubscribeFrame subscribe) {
        if (subscriptions.containsKey(subscribe.consumerTag())) {
            proxy.answerError(subscribe.requestId(), ErrorCode.CONSUMER_TAG_IN_USE,
                    "consumer tag " + subscribe.consumerTag() + " is already in use");
            return;
        }
        if (!permit(subscribe.requestId(), Action.CONSUME, subscribe.queue())) {
            return;
        }
        int maxConsumers = limits().limits().maxConsumersPerConnection;
        if (subscriptions.size() >= maxConsumers) {
            limits().countRejectedConsumer();
            proxy.answerError(subscribe.requestId(), ErrorCode.RESOURCE_LIMIT, "consumer count " + (subscriptions.size() + 1)
                    + " on this connection would exceed limits.max-consumers-per-connection " + maxConsumers);
            return;
        }
        BrokerQueue queue = queues.get(subscribe.queue());
        if (queue == null) {
            proxy.answerError(subscribe.requestId(), ErrorCode.UNKNOWN_QUEUE, "queue '" + subscribe.queue() + "' does not exist");
            return;
        }
        Subscription sub = Subscription.open(queue, proxy, subscribe.consumerTag(), subscribe.initialCredit(), connectionCredit());
        subscriptions.put(subscribe.consumerTag(), sub);
        proxy.answerOk(subscribe.requestId());
    }

    private ConnectionCredit connectionCredit() {
        if (unackedBound == null) {
            unackedBound = new ConnectionCredit(limits().limits().maxUnackedPerConnection, limits()::countRejectedCredit);
        }
        return unackedBound;
    }

    void unsubscribe(UnsubscribeFrame unsubscribe) {
        Subscription sub = subscriptions.remove(unsubscribe.consumerTag());
        if (sub == null) {
            proxy.answerError(unsubscribe.requestId(), ErrorCode.UNKNOWN_CONSUMER,
                    "no subscription with consumer tag " + unsubscribe.consumerTag());
        } else {
            // Answered once the queue ended the consumer: an OK written at once could precede deliveries the queue was
            // still writing for the tag (docs/protocol.md: none after the OK; UnsubscribeOrderTest).
            long requestId = unsubscribe.requestId();
            gate.afterOffLoop(sub.close(), false, (ended, error) -> proxy.answerOk(requestId));
        }
    }

    void ack(AckFrame ack) {
        Subscription sub = subscription(ack.consumerTag());
        if (sub != null) {
            sub.ack(ack);
        }
    }

    void credit(CreditFrame credit) {
        Subscription sub = subscription(credit.consumerTag());
        // A CREDIT of 0 adds nothing: it stays here, on the loop, as cheap as a HEARTBEAT. Handed to the queue, each was a
        // task on its executor and a dispatch pass, so a flood of them kept the queue busy for nothing (CreditFloodTest).
        if (sub != null && credit.credit() > 0) {
            sub.credit(credit.credit());
        }
    }

    void nack(NackFrame nack) {
        Subscription sub = subscription(nack.consumerTag());
        if (sub != null) {
            sub.nack(nack);
        }
    }

    private Subscription subscription(int tag) {
        Subscription sub = subscriptions.get(tag);
        if (sub == null) {
            proxy.answerError(0, ErrorCode.UNKNOWN_CONSUMER, "no subscription with consumer tag " + tag + " on this connection");
        }
        return sub;
    }

    /** The connection can take more writes again: its consumers' queues may deliver. */
    void writable() {
        for (Subscription sub : subscriptions.values()) {
            sub.writable();
        }
    }

    // ------------------------------------------------------------------ managing queues

    void declare(DeclareQueueFrame declare) {
        if (!permit(declare.requestId(), Action.MANAGE, declare.queue())) {
            return;
        }
        if (declare.passive()) {
            BrokerQueue q = queues.get(declare.queue());
            if (q == null) {
                proxy.answerError(declare.requestId(), ErrorCode.UNKNOWN_QUEUE, "queue '" + declare.queue() + "' does not exist");
            } else {
                proxy.answerOk(declare.requestId(), q.messageCount());
            }
            return;
        }
        BrokerQueue existing;
        try {
            // A queue that exists: a comparison of settings, no lock, no file, so it is answered here.
            existing = queues.existing(declare.queue(), declare.settings());
        } catch (RuntimeException e) {
            answerDeclare(declare, null, e);
            return;
        }
        if (existing != null) {
            answerDeclare(declare, existing, null);
            return;
        }
        // Checked against limits.max-queues on the declare thread, exactly, with the declares grouped with it;
        // on a cluster node, by the leader before it submits the entry, counting its entries in flight (rule R2).
        gate.afterOffLoop(queues.replication() != null ? queues.replication().declare(declare.queue(), declare.settings())
                        : queues.declareGrouped(declare.queue(), declare.settings(), limits().limits().maxQueues), true,
                (q, error) -> answerDeclare(declare, q, error));
    }

    private void answerDeclare(DeclareQueueFrame declare, BrokerQueue q, Throwable error) {
        Throwable e = ErrorCodes.unwrap(error);
        if (e == null) {
            proxy.answerOk(declare.requestId(), q.messageCount());
        } else if (ErrorCodes.of(e) != ErrorCode.INTERNAL_ERROR) {
            if (ErrorCodes.of(e) == ErrorCode.RESOURCE_LIMIT) {
                limits().countRejectedQueue();
            }
            proxy.answerError(declare.requestId(), ErrorCodes.of(e), e.getMessage());
        } else {
            failure.accept(e);
        }
    }

    void delete(DeleteQueueFrame delete) {
        if (!permit(delete.requestId(), Action.MANAGE, delete.queue())) {
            return;
        }
        long requestId = delete.requestId();
        String name = delete.queue();
        // On a cluster node, every node deletes it when the entry is applied (rule R7 of docs/replication.md).
        CompletableFuture<Boolean> deleting = queues.replication() != null ? queues.replication().delete(name)
                : queues.onDeclareThread(() -> queues.delete(name));
        gate.afterOffLoop(deleting, false, (deleted, error) -> {
            Throwable e = ErrorCodes.unwrap(error);
            if (e != null && ErrorCodes.of(e) == ErrorCode.NOT_LEADER) {
                proxy.answerError(requestId, ErrorCode.NOT_LEADER, e.getMessage()); // the connection is being closed too (rule S1)
            } else if (e != null) {
                failure.accept(e);
            } else if (deleted) {
                proxy.answerOk(requestId);
            } else {
                proxy.answerError(requestId, ErrorCode.UNKNOWN_QUEUE, "queue '" + name + "' does not exist");
            }
        });
    }

    void purge(PurgeQueueFrame purge) {
        if (!permit(purge.requestId(), Action.MANAGE, purge.queue())) {
            return;
        }
        BrokerQueue queue = queues.get(purge.queue());
        if (queue == null) {
            proxy.answerError(purge.requestId(), ErrorCode.UNKNOWN_QUEUE, "queue '" + purge.queue() + "' does not exist");
            return;
        }
        long requestId = purge.requestId();
        if (queues.replication() != null) {
            // Rule R7 of docs/replication.md: answered once the removed ids are committed and applied here.
            gate.afterOffLoop(queues.replication().purge(queue), false, (removed, error) -> {
                Throwable e = ErrorCodes.unwrap(error);
                if (e == null) {
                    proxy.answerOk(requestId, removed);
                } else if (ErrorCodes.of(e) != ErrorCode.INTERNAL_ERROR) {
                    proxy.answerError(requestId, ErrorCodes.of(e), "purge of '" + purge.queue() + "' failed: " + e.getMessage());
                } else {
                    failure.accept(e);
                }
            });
            return;
        }
        queue.purge().addListener(f -> {
            if (f.isSuccess()) {
                proxy.answerOk(requestId, (Long) f.getNow());
            } else if (ErrorCodes.of(f.cause()) != ErrorCode.INTERNAL_ERROR) {
                proxy.answerError(requestId, ErrorCodes.of(f.cause()), "purge of '" + purge.queue() + "' failed: "
                        + ErrorCodes.unwrap(f.cause()).getMessage());
            } else {
                LOG.error("Purge of queue '{}' for {} failed.", purge.queue(), proxy.describe(), f.cause());
                proxy.answerError(requestId, ErrorCode.INTERNAL_ERROR, "purge of '" + purge.queue() + "' failed; see the broker log");
            }
        });
    }

    /**
     * PRODUCER_INIT: registers an instance of a named producer with the queue (a new epoch, or the one
     * it resumes); the queue answers once the registration is durable. Publishes under the name that
     * follow it reach the queue after the registration (one executor, in order).
     */
    void initProducer(ProducerInitFrame init) {
        long requestId = init.requestId();
        if (!permit(requestId, Action.PUBLISH, init.queue())) {
            return;
        }
        String problem = ProducerInitFrame.nameProblem(init.producerName());
        if (problem != null) {
            proxy.answerError(requestId, ErrorCode.INVALID_PRODUCER, problem + "; a producer name is 1 to "
                    + ProducerInitFrame.MAX_NAME_BYTES + " bytes of UTF-8");
            return;
        }
        BrokerQueue queue = queues.get(init.queue());
        if (queue == null) {
            proxy.answerError(requestId, ErrorCode.UNKNOWN_QUEUE, "queue '" + init.queue() + "' does not exist; declare it first");
            return;
        }
        long producerId = ProducerIds.forName(init.producerName());
        producerQueues.add(queue);
        CompletableFuture<io.sluice.broker.queue.ProducerRegistry.Registered> registration = queues.replication() == null
                ? queue.producerState().register(proxy, producerId, init.epoch())
                : queues.replication().registerProducer(queue, proxy, init.producerName(), producerId, init.epoch()); // R11
        registration.whenComplete((registered, failure) -> {
            if (failure != null) {
                ErrorCode code = ErrorCodes.of(failure);
                if (code == ErrorCode.INTERNAL_ERROR) {
                    LOG.error("Registering producer '{}' on queue '{}' for {} failed.", Printable.escape(init.producerName()), init.queue(),
                            proxy.describe(), ErrorCodes.unwrap(failure));
                    proxy.answerError(requestId, code, "the broker could not record the producer's registration; see the broker log");
                } else {
                    proxy.answerError(requestId, code, ErrorCodes.unwrap(failure).getMessage());
                }
            } else if (registered.epoch() < 0) {
                proxy.answerError(requestId, ErrorCode.PRODUCER_FENCED, "producer '" + init.producerName() + "' cannot resume epoch "
                        + init.epoch() + " on queue '" + init.queue() + "': a newer instance registered with epoch "
                        + registered.currentEpoch());
            } else {
                proxy.answer(new ProducerOkFrame(requestId, producerId, registered.epoch(), registered.lastSequence()));
            }
        });
    }

    /** The refusal of what a cluster node does not replicate yet (docs/replication.md, "Not built yet"). */
    private static String notReplicated(String what) {
        return "this broker is a cluster node, and a cluster does not replicate " + what + " yet; see docs/replication.md";
    }

    /** True if the user may; else answers ACCESS_DENIED (the connection stays usable) and returns false. */
    private boolean permit(long requestId, Action action, String queue) {
        if (security.authorizer().allowed(user, action, queue)) {
            return true;
        }
        String message = Authorizer.denial(user, action, queue);
        LOG.info("Access denied to {}: {}.", proxy.describe(), Printable.escape(message)); // the queue is not checked yet
        proxy.answerError(requestId, ErrorCode.ACCESS_DENIED, message);
        return false;
    }

    /**
     * The connection closed: its consumers leave their queues, and their messages go back (D4); the
     * queues its named producers registered on let it go.
     */
    void close() {
        if (transactions != null) {
            transactions.close(); // before the subscriptions go: what they held returns to the queues first
        }
        for (Subscription sub : subscriptions.values()) {
            sub.close();
        }
        subscriptions.clear();
        for (BrokerQueue queue : producerQueues) {
            queue.producerState().connectionClosed(proxy);
        }
        producerQueues.clear();
    }
}
