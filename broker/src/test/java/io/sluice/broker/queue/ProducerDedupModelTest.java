package io.sluice.broker.queue;

import io.sluice.broker.log.RateLimitedLog;
import io.sluice.storage.DurabilityMode;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.dedup.ProducerTable;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The producer table of a real queue store, through interleavings of new publishes, refusals, resends
 * (as after a disconnect), consumption with reclaim, restarts, and the clock passing the idle expiry,
 * against a model that knows exactly which (producer, sequence) pairs are stored:
 * <ul>
 *   <li>a publish answered DUPLICATE was stored before (else a message would be lost);</li>
 *   <li>a publish of a stored pair is answered DUPLICATE, unless the table forgot a producer (evicted
 *       or expired) since that pair was stored (else a duplicate was stored), restarts and reclaim
 *       included;</li>
 *   <li>OUT_OF_WINDOW only for a sequence a window or more below the producer's highest stored.</li>
 * </ul>
 */
class ProducerDedupModelTest {
    private static final long WINDOW = 40;
    private static final int PAYLOAD_BYTES = 48 << 10;
    private static final ClientConnection CONNECTION = new FakeConnection("model");

    sealed interface Op permits Publish, Resend, Refused, ConsumeAll, Restart, Idle {
    }

    /** The producer's next sequence, possibly skipping some (as messages that expired in the client). */
    record Publish(int producer, int skip) implements Op {
    }

    /** One of the producer's sequences sent before, from the newest back. */
    record Resend(int producer, int back) implements Op {
    }

    /** The producer's next sequence, refused by the broker (never stored). */
    record Refused(int producer) implements Op {
    }

    record ConsumeAll() implements Op {
    }

    record Restart() implements Op {
    }

    record Idle(long millis) implements Op {
    }

    @Provide
    Arbitrary<List<Op>> operations() {
        Arbitrary<Integer> producer = Arbitraries.integers().between(1, 5);
        Arbitrary<Op> op = Arbitraries.frequencyOf(
                net.jqwik.api.Tuple.of(10, Combinators.combine(producer, Arbitraries.of(0, 0, 0, 1, 3)).as(Publish::new)),
                net.jqwik.api.Tuple.of(6, Combinators.combine(producer, Arbitraries.integers().between(0, 60)).as(Resend::new)),
                net.jqwik.api.Tuple.of(2, producer.map(Refused::new)),
                net.jqwik.api.Tuple.of(1, Arbitraries.just(new ConsumeAll())),
                net.jqwik.api.Tuple.of(1, Arbitraries.just(new Restart())),
                net.jqwik.api.Tuple.of(1, Arbitraries.of(100L, 2_000L).map(Idle::new)));
        return op.list().ofMinSize(20).ofMaxSize(120);
    }

    @Property(tries = 25)
    void withRoomForEveryProducerNothingIsForgotten(@ForAll("operations") List<Op> ops) throws Exception {
        Sweep last = run(ops, 16, false);
        assertEquals(last.expected(), last.recognised(), "after a last restart, every stored pair in the window is a duplicate");
    }

    @Property(tries = 25)
    void withEvictionAndExpiryNothingIsLostAndOnlyTheForgottenStoreTwice(@ForAll("operations") List<Op> ops) throws Exception {
        Sweep last = run(ops, 3, true);
        assertEquals(last.expected(), last.recognised(),
                "after a last restart, every stored pair in the window whose producer was not forgotten since is a duplicate");
    }

    /** The final check: stored pairs the reopened table must still know, and how many it answered DUPLICATE. */
    record Sweep(int expected, int recognised) {
    }

    /** Runs {@code ops}, with every per-step check asserted as it goes, then restarts once more and sweeps. */
    private Sweep run(List<Op> ops, int maxProducers, boolean clockMoves) throws Exception {
        Path dir = Files.createTempDirectory("dedup-model");
        AtomicLong clock = new AtomicLong(1_000_000);
        StoreConfig config = StoreConfig.builder().durability(DurabilityMode.ALWAYS).segmentBytes(1 << 20)
                .maxMessageBytes(1 << 18).reservedDiskBytes(64L << 20).ackJournalBytes(1 << 16)
                .relocateMaxLiveRatio(0).build();
        Model model = new Model();
        Instance instance = new Instance(dir, config, clock, maxProducers, 0);
        try {
            for (Op op : ops) {
                if (op instanceof Publish p) {
                    long sequence = model.next(p.producer()) + p.skip();
                    model.sent(p.producer(), sequence);
                    instance.publish(model, p.producer(), sequence);
                } else if (op instanceof Refused r) {
                    long sequence = model.next(r.producer());
                    model.sent(r.producer(), sequence);
                    ProducerTable.Verdict v = instance.registry.check(CONNECTION, r.producer(), sequence, clock.get());
                    assertEquals(ProducerTable.Verdict.NEW, v, "a sequence never sent is new");
                } else if (op instanceof Resend r) {
                    List<Long> sent = model.sentBy(r.producer());
                    if (!sent.isEmpty()) {
                        instance.publish(model, r.producer(), sent.get(Math.max(0, sent.size() - 1 - r.back())));
                    }
                } else if (op instanceof ConsumeAll) {
                    instance.ackEverything();
                } else if (op instanceof Restart) {
                    instance = instance.restart();
                } else if (op instanceof Idle i && clockMoves) {
                    clock.addAndGet(i.millis());
                }
            }
            if (!clockMoves) {
                assertEquals(0, instance.forgotten(), "with room for every producer and no time passing, none is forgotten");
            }
            instance = instance.restart();
            return instance.sweep(model);
        } finally {
            instance.close();
            try (Stream<Path> files = Files.walk(dir)) {
                files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
    }

    /** What is stored, per producer, and what was sent. */
    private static final class Model {
        final Map<Integer, Long> lastSent = new HashMap<>();
        final Map<Integer, List<Long>> sent = new HashMap<>();
        /** (producer, sequence) stored, with the table's forget count when it was stored. */
        final Map<List<Long>, Long> stored = new HashMap<>();
        final Map<Integer, Long> highestStored = new HashMap<>();

        long next(int producer) {
            return lastSent.getOrDefault(producer, 0L) + 1;
        }

        void sent(int producer, long sequence) {
            lastSent.put(producer, sequence);
            sent.computeIfAbsent(producer, p -> new ArrayList<>()).add(sequence);
        }

        List<Long> sentBy(int producer) {
            return sent.getOrDefault(producer, List.of());
        }
    }

    /** One opening of the store and its producer state. */
    private static final class Instance {
        final Path dir;
        final StoreConfig config;
        final AtomicLong clock;
        final int maxProducers;
        final MessageStore store;
        final QueueStore queue;
        final ProducerRegistry registry;
        /** Producers the tables of earlier openings forgot. */
        final long forgottenBefore;

        Instance(Path dir, StoreConfig config, AtomicLong clock, int maxProducers, long forgottenBefore) {
            this.forgottenBefore = forgottenBefore;
            this.dir = dir;
            this.config = config;
            this.clock = clock;
            this.maxProducers = maxProducers;
            this.store = MessageStore.open(dir, config, clock::get);
            this.queue = store.hasQueue("q") ? store.queue("q") : store.createQueue("q");
            this.registry = ProducerRegistry.open("q", queue, new ProducerTable(maxProducers, 1_000, WINDOW), Runnable::run, Runnable::run,
                    ProducerRegistryTest.NO_RETRY, true, RateLimitedLog.standard("producer checkpoints"));
        }

        long forgotten() {
            return forgottenBefore + registry.table().evictions() + registry.table().expiries();
        }

        void publish(Model model, int producer, long sequence) throws Exception {
            List<Long> key = List.of((long) producer, sequence);
            ProducerTable.Verdict v = registry.check(CONNECTION, producer, sequence, clock.get());
            Long storedAt = model.stored.get(key);
            long highest = model.highestStored.getOrDefault(producer, 0L);
            if (v == ProducerTable.Verdict.DUPLICATE) {
                assertTrue(storedAt != null, "producer " + producer + " sequence " + sequence
                        + " was answered DUPLICATE but was never stored: it would be lost");
            } else if (v == ProducerTable.Verdict.NEW) {
                if (storedAt != null && storedAt == forgotten()) {
                    fail("producer " + producer + " sequence " + sequence + " was stored before and nothing was "
                            + "forgotten since, yet it was answered NEW: it would be stored twice");
                }
                long id = queue.append(producer, sequence, ByteBuffer.allocate(0), ByteBuffer.wrap(new byte[PAYLOAD_BYTES]));
                registry.stored(CONNECTION, producer, sequence, id, clock.get());
                model.stored.put(key, forgotten());
                model.highestStored.merge(producer, sequence, Math::max);
                queue.whenDurable(id).get(10, TimeUnit.SECONDS);
            } else if (v == ProducerTable.Verdict.OUT_OF_WINDOW) {
                assertTrue(highest - sequence >= WINDOW, "sequence " + sequence + " of producer " + producer
                        + " refused as out of the window, but the highest stored is " + highest);
            } else {
                fail("no producer registered, yet " + producer + " was fenced");
            }
        }

        /**
         * Every stored pair within the window of its producer's highest, stored with nothing forgotten
         * since (so the table must still know it), checked without changing what is stored.
         */
        Sweep sweep(Model model) {
            long forgottenNow = forgotten();
            int expected = 0;
            int recognised = 0;
            for (Map.Entry<List<Long>, Long> e : model.stored.entrySet()) {
                int producer = e.getKey().get(0).intValue();
                long sequence = e.getKey().get(1);
                if (e.getValue() != forgottenNow || model.highestStored.get(producer) - sequence >= WINDOW) {
                    continue;
                }
                expected++;
                if (registry.check(CONNECTION, producer, sequence, clock.get()) == ProducerTable.Verdict.DUPLICATE) {
                    recognised++;
                }
            }
            return new Sweep(expected, recognised);
        }

        void ackEverything() {
            long last = queue.writtenIndex();
            if (last >= 0) {
                queue.ackRange(0, last);
            }
        }

        Instance restart() {
            store.close();
            return new Instance(dir, config, clock, maxProducers, forgotten());
        }

        void close() {
            store.close();
        }
    }
}
