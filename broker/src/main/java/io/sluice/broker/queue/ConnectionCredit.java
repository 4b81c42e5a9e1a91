package io.sluice.broker.queue;

import java.util.concurrent.atomic.AtomicLong;

/**
 * A connection's bound on unacknowledged messages ({@code limits.max-unacked-per-connection}): the
 * credit its consumers hold plus the messages delivered to them and not yet settled. One per
 * connection, shared by its consumers' queues, which run on different executors: every change goes
 * through this object, atomically.
 *
 * <p>Only a queue changes it, on its executor, in the order the consumer's frames arrive: a grant
 * (SUBSCRIBE, CREDIT) after the ACKs before it have settled what they settled, and a settlement only
 * for messages the queue found outstanding, so an ACK naming ids never delivered frees nothing.
 */
public final class ConnectionCredit {
    private final long max;
    private final Runnable refusedCounter;
    private final AtomicLong outstanding = new AtomicLong();

    /** @param refusedCounter counts each grant cut short (the limit's metric) */
    public ConnectionCredit(long max, Runnable refusedCounter) {
        this.max = max;
        this.refusedCounter = refusedCounter;
    }

    /** Grants what fits under the limit of {@code wanted}; returns it. */
    long grant(long wanted) {
        while (true) {
            long now = outstanding.get();
            long granted = Math.max(0, Math.min(wanted, max - now));
            if (outstanding.compareAndSet(now, now + granted)) {
                if (granted < wanted) {
                    refusedCounter.run();
                }
                return granted;
            }
        }
    }

    /** Why a grant of {@code wanted} for {@code tag} gave only {@code granted}: the sentence of the RESOURCE_LIMIT error. */
    String refusal(int tag, long wanted, long granted) {
        return "credit " + wanted + " for consumer tag " + tag + " would bring the connection's outstanding credit "
                + (outstanding.get() - granted) + " above limits.max-unacked-per-connection " + max + "; granted " + granted;
    }

    /** Messages settled (acknowledged or rejected) or credit given up by a consumer that left. */
    void settle(long units) {
        if (units > 0) {
            outstanding.addAndGet(-units);
        }
    }

    /** Credit held plus deliveries unsettled, over every consumer of the connection. */
    public long outstanding() {
        return outstanding.get();
    }
}
