package io.sluice.broker.queue;

import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.PublishCursor;
import io.sluice.protocol.PublishFrame;
import io.sluice.storage.dedup.ProducerTable;

import java.util.function.BiConsumer;

/**
 * Rule R9 of docs/replication.md: on a cluster's leader, a queue's quota is checked before a PUBLISH is submitted
 * to the log, exactly as a single broker checks it before storing (docs/flow-control.md: the same refusals and
 * reasons, and drop-oldest's drops, replicated as acks); followers store what was committed with no check. What
 * was admitted counts as uncommitted in the {@link Backlog} until its entry is applied here or Raft refuses it,
 * so it feeds the same SLOWED and BLOCKED states, and past {@code cluster.max-uncommitted-bytes} blocks by itself.
 *
 * <p>A frame the quota refuses is answered message by message, as a single broker answers: a resend of a message
 * the producer table holds is confirmed again once what is written here is durable (its entry was committed and
 * applied, so it is on a majority), a resend of a message submitted and not applied yet waits for it
 * ({@link InFlightPublishes}), the others are refused. Refused whole, or refused while its original is in the log, a
 * resend would tell its producer that a stored message was not stored.
 *
 * <p>Threads: the queue's executor.
 */
final class LeaderAdmission {
    private final BrokerQueue queue;
    private final Backlog backlog;
    private final QueuePublishers publishers;
    private final ProducerRegistry producers;
    private final PendingConfirms pendingConfirms;
    private final Runnable updateFlow;
    private final Runnable releaseConfirms;
    private final InFlightPublishes inFlight = new InFlightPublishes();
    /** Messages refused here, each counted before its refusal is written; read by metrics and tests. */
    private volatile long refused; // written by the queue's executor only

    LeaderAdmission(BrokerQueue queue, Backlog backlog, QueuePublishers publishers, ProducerRegistry producers,
                    PendingConfirms pendingConfirms, Runnable updateFlow, Runnable releaseConfirms) {
        this.queue = queue;
        this.backlog = backlog;
        this.publishers = publishers;
        this.producers = producers;
        this.pendingConfirms = pendingConfirms;
        this.updateFlow = updateFlow;
        this.releaseConfirms = releaseConfirms;
    }

    /**
     * Hands the frame to {@code submit} if every message of it may be stored, counted as uncommitted, with the epochs
     * {@code link} holds for its named producers (rule R11); else refuses its messages on {@code link} (one entry is
     * stored whole or not at all) and releases it.
     */
    void admit(ProducerLink link, PublishFrame frame, long maxUncommittedBytes, BiConsumer<PublishFrame, ProducerEpochs> submit) {
        publishers.add(link, backlog.state(), backlog.reason()); // told BLOCKED now if it is, even if refused below
        boolean deleted = queue.isClosed();
        String tooLarge = deleted ? null : tooLarge(frame);
        String refusal = deleted ? "queue '" + queue.name() + "' was deleted before the message was stored"
                : tooLarge != null ? tooLarge : backlog.admit(queue.store().unackedMessages(), frame, maxUncommittedBytes, queue::dropOldest);
        if (refusal != null) {
            try {
                if (deleted) {
                    link.refuseAll(frame, ErrorCode.UNKNOWN_QUEUE, refusal);
                } else {
                    refuseNewConfirmResent(link, frame, tooLarge != null ? ErrorCode.MESSAGE_TOO_LARGE : ErrorCode.QUEUE_BLOCKED, refusal);
                }
            } finally {
                frame.release();
            }
            return;
        }
        updateFlow.run();
        inFlight.submitted(frame);
        submit.accept(frame, producers.resolveEpochs(link, frame));
    }

    /**
     * Rule R2: the size of a message is the leader's check, before it submits, against its {@code storage.max-message-bytes}
     * and what its store can hold at all; every node stores what was committed whatever its own limit. Null if every
     * message of the frame fits, else the refusal (the frame is admitted whole or refused whole).
     */
    private String tooLarge(PublishFrame frame) {
        PublishCursor cursor = frame.cursor();
        while (cursor.next()) {
            String refusal = tooLarge(cursor.headersLength() + cursor.payloadLength(), frame.messageCount(), "a PUBLISH frame");
            if (refusal != null) {
                return refusal;
            }
        }
        return null;
    }

    /** As above, for one message of {@code bytes} among {@code count} that {@code what} holds. */
    private String tooLarge(int bytes, int count, String what) {
        io.sluice.storage.StoreConfig config = queue.store().config();
        int limit = Math.min(config.maxMessageBytes(), config.storableMessageBytes());
        if (bytes <= limit) {
            return null;
        }
        return "message of " + bytes + " bytes (headers plus payload) for queue '" + queue.name() + "' exceeds "
                + (limit == config.maxMessageBytes() ? "the limit of " + limit + " bytes (storage.max-message-bytes)" : "the " + limit + " bytes a record of the store can hold")
                + (count > 1 ? "; a cluster stores " + what + " whole or not at all, so its " + count + " messages are refused" : "");
    }

    /** A PUBLISH entry was applied here, after its messages were stored: resends waiting for them are answered. */
    void applied(PublishFrame frame) {
        inFlight.applied(frame, this::answerWaiting);
    }

    /**
     * The quota (or a message's size) refused the frame: resends of stored messages are confirmed again, every other
     * message refused, a new one with {@code code}.
     */
    private void refuseNewConfirmResent(ProducerLink link, PublishFrame frame, ErrorCode code, String refusal) {
        long receivedAtNanos = System.nanoTime();
        long nowMillis = producers.deduplicates() ? queue.store().nowMillis() : 0;
        PendingConfirms.StoredRanges resent = new PendingConfirms.StoredRanges();
        int resends = 0;
        long resentBytes = 0;
        long resentHeld = 0;
        int refusedMessages = 0;
        long refusedBytes = 0;
        long refusedHeld = 0;
        RefusalRun refusals = new RefusalRun(link);
        PublishCursor cursor = frame.cursor();
        while (cursor.next()) {
            long producerId = cursor.producerId();
            long sequence = cursor.sequence();
            int windowBytes = link.windowBytes(cursor.headersLength(), cursor.payloadLength());
            int heldBytes = cursor.headersLength() + cursor.payloadLength();
            ProducerTable.Verdict verdict = producers.check(link, producerId, sequence, nowMillis);
            if (verdict == ProducerTable.Verdict.DUPLICATE) {
                resent.stored(producerId, sequence);
                resends++;
                resentBytes += windowBytes;
                resentHeld += heldBytes;
            } else if (verdict == ProducerTable.Verdict.NEW
                    && inFlight.await(new InFlightPublishes.Waiting(link, producerId, sequence, windowBytes, heldBytes, refusal))) {
                continue; // answered once its original's entry is applied or refused
            } else {
                refuse(refusals, producerId, sequence, verdict, code, refusal);
                refusedMessages++;
                refusedBytes += windowBytes;
                refusedHeld += heldBytes;
            }
        }
        refusals.flush();
        if (refusedMessages > 0) {
            link.publishCredit(refusedMessages, refusedBytes, refusedHeld);
        }
        if (resends > 0) {
            pendingConfirms.add(queue.store().writtenIndex(), link, resent.build(), resends, resends, resentBytes, resentHeld,
                    receivedAtNanos);
            releaseConfirms.run();
        }
        link.flush();
    }

    /**
     * A new message refused by the quota; any other verdict as a single broker answers it, whatever the quota. Counted
     * before the refusal goes out, as a single broker counts it: whoever reads the counter after the client heard of
     * the refusal sees it.
     */
    private void refuse(RefusalRun refusals, long producerId, long sequence, ProducerTable.Verdict verdict, ErrorCode code,
                        String refusal) {
        refused++;
        if (verdict == ProducerTable.Verdict.NEW) {
            refusals.refuse(producerId, sequence, code, refusal);
        } else {
            refusals.refuse(producerId, sequence,
                    verdict == ProducerTable.Verdict.FENCED ? ErrorCode.PRODUCER_FENCED : ErrorCode.SEQUENCE_OUT_OF_WINDOW,
                    producers.refusal(verdict, producerId));
        }
    }

    /** A resend that waited for its original: confirmed if the producer table holds it now, else refused. */
    private void answerWaiting(InFlightPublishes.Waiting resend) {
        ProducerLink link = resend.link();
        long nowMillis = producers.deduplicates() ? queue.store().nowMillis() : 0;
        ProducerTable.Verdict verdict = producers.check(link, resend.producerId(), resend.sequence(), nowMillis);
        if (verdict == ProducerTable.Verdict.DUPLICATE) {
            PendingConfirms.StoredRanges stored = new PendingConfirms.StoredRanges();
            stored.stored(resend.producerId(), resend.sequence());
            pendingConfirms.add(queue.store().writtenIndex(), link, stored.build(), 1, 1, resend.windowBytes(), resend.heldBytes(),
                    System.nanoTime());
            releaseConfirms.run();
        } else {
            RefusalRun refusal = new RefusalRun(link);
            refuse(refusal, resend.producerId(), resend.sequence(), verdict, ErrorCode.QUEUE_BLOCKED, resend.refusal());
            refusal.flush();
            link.publishCredit(1, resend.windowBytes(), resend.heldBytes());
        }
        link.flush();
    }

    /**
     * Rule R8 with the quota of R9: the leader checks this queue's quota for a dead-letter copy of {@code messageBytes}
     * before it submits the dead-letter, as a single broker checks it before storing the copy (the same refusals,
     * and drop-oldest's drops, replicated as acks). Null if admitted, counted as uncommitted until the entry is
     * applied here or Raft refuses it; else the reason, which fails the move (the original stays in its source).
     */
    String admitCopy(int messageBytes, long maxUncommittedBytes) {
        if (queue.isClosed()) {
            return "queue '" + queue.name() + "' was deleted";
        }
        int storable = queue.store().config().storableMessageBytes();
        if (messageBytes > storable) { // committed, it would stop every node that cannot store it (rule R2)
            return "the dead-letter copy of " + messageBytes + " bytes (headers plus payload) exceeds the " + storable
                    + " bytes a record of queue '" + queue.name() + "' can hold";
        }
        String refusal = backlog.refusal(queue.store().unackedMessages(), messageBytes, queue::dropOldest);
        if (refusal != null) {
            refused++;
            return refusal;
        }
        backlog.submitted(messageBytes, maxUncommittedBytes);
        updateFlow.run();
        return null;
    }

    /**
     * Rule R13 with the quota of R9: a cluster transaction's TX_PUBLISH of messages of {@code sizes} bytes, which
     * stay in the leader's memory until the transaction commits. Checked against the quota as a single broker checks
     * a staged message (T2 of docs/transactions.md: the same refusals, and drop-oldest's drops), then counted as
     * uncommitted, so that they feed the queue's flow state and {@code cluster.max-uncommitted-bytes} until the
     * transaction ends ({@link #transactionEnded}). Null if admitted; else the reason, and nothing is counted.
     */
    String admitTransactional(int[] sizes, long maxUncommittedBytes) {
        if (queue.isClosed()) {
            return "queue '" + queue.name() + "' was deleted";
        }
        for (int size : sizes) {
            String tooLarge = tooLarge(size, sizes.length, "a TX_PUBLISH");
            if (tooLarge != null) {
                refused += sizes.length;
                return tooLarge;
            }
        }
        String refusal = backlog.admit(queue.store().unackedMessages(), sizes, maxUncommittedBytes, queue::dropOldest);
        if (refusal != null) {
            refused += sizes.length;
            return refusal;
        }
        updateFlow.run();
        return null;
    }

    /**
     * The transaction that {@link #admitTransactional} counted messages for ended: committed (its messages are stored
     * now, and count there), rolled back, or refused. They are no longer uncommitted.
     */
    void transactionEnded(long messages, long messageBytes) {
        backlog.uncommittedDone(messages, messageBytes);
        updateFlow.run();
    }

    /** Raft refused a frame {@link #admit} counted: it is no longer uncommitted, nor is anything submitted after it. */
    void notCommitted(long messages, long messageBytes) {
        backlog.uncommittedDone(messages, messageBytes);
        updateFlow.run();
        nothingInFlight();
    }

    /** This node's submissions were refused or it lost its leadership: the resends waiting are answered now. */
    void nothingInFlight() {
        inFlight.clear(this::answerWaiting);
    }

    /** Messages refused by the quota before they were submitted. */
    long refused() {
        return refused;
    }
}
