package io.sluice.broker.admin;

import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.QueueSnapshot;

import java.util.Collection;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import java.util.stream.Collectors;

/**
 * Message rates per queue for the admin API, the CLI and the console: messages per second published,
 * delivered and acknowledged over the last sampling interval, from two successive samples of each
 * queue's counters.
 *
 * <p>Rule R1: a rate is (counter now - counter at the previous sample) / (time between the two
 * samples), over the most recent pair; before a queue has two samples its rates are 0. A counter that
 * went down (it cannot, short of a queue deleted and declared again under the same name) starts
 * the queue afresh.
 *
 * <p>Threads: {@link #sample} runs on the admin server's scheduler every {@link #INTERVAL_MS}; it
 * asks every queue for its counters alone on the queue's executor ({@link BrokerQueue#counters}: a
 * whole snapshot lists consumers and producers and reads the oldest ready message from the store,
 * for every queue, every interval) and records each answer there ({@link #record}). {@link #of} is read by the HTTP threads. The samples sit in a concurrent map,
 * each entry immutable.
 */
final class QueueRates {
    /** How often the counters are sampled: the interval a rate is measured over. */
    static final long INTERVAL_MS = 5000;

    /** Messages per second over the last interval; {@code intervalMs} 0 when there is no pair yet. */
    record Rates(double publishedPerSecond, double deliveredPerSecond, double ackedPerSecond, long intervalMs) {
        static final Rates NONE = new Rates(0, 0, 0, 0);
    }

    private record Sample(long nanos, long published, long delivered, long acked) {
    }

    private record Pair(Sample previous, Sample latest) {
    }

    private final LongSupplier nanoClock;
    private final Map<String, Pair> samples = new ConcurrentHashMap<>();

    QueueRates(LongSupplier nanoClock) {
        this.nanoClock = nanoClock;
    }

    /** Asks each queue for its counters; queues no longer in {@code queues} are forgotten. */
    void sample(Collection<BrokerQueue> queues) {
        Set<String> names = queues.stream().map(BrokerQueue::name).collect(Collectors.toSet());
        samples.keySet().retainAll(names);
        for (BrokerQueue q : queues) {
            try {
                q.counters().addListener(f -> {
                    if (f.isSuccess()) {
                        record(q.name(), (QueueSnapshot.Counters) f.getNow());
                    }
                });
            } catch (RuntimeException closing) {
                // the queue is being deleted or the broker stops: no sample, and the next round forgets it
            }
        }
    }

    /** Takes in one queue's counters, as of now on the clock. */
    void record(String queue, QueueSnapshot.Counters counters) {
        Sample now = new Sample(nanoClock.getAsLong(), counters.published(), counters.delivered(), counters.acked());
        samples.compute(queue, (name, pair) -> {
            if (pair == null || now.published < pair.latest.published || now.delivered < pair.latest.delivered
                    || now.acked < pair.latest.acked) {
                return new Pair(null, now); // R1: first sample, or a new queue under an old name
            }
            return new Pair(pair.latest, now);
        });
    }

    /** The rates of one queue (rule R1). */
    Rates of(String queue) {
        Pair pair = samples.get(queue);
        if (pair == null || pair.previous == null || pair.latest.nanos <= pair.previous.nanos) {
            return Rates.NONE;
        }
        double seconds = (pair.latest.nanos - pair.previous.nanos) / 1e9;
        return new Rates((pair.latest.published - pair.previous.published) / seconds,
                (pair.latest.delivered - pair.previous.delivered) / seconds,
                (pair.latest.acked - pair.previous.acked) / seconds,
                Math.round(seconds * 1000));
    }
}
