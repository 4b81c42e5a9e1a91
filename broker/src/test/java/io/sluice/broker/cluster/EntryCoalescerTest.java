package io.sluice.broker.cluster;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

class EntryCoalescerTest {
    private static final int CAP = 1000;
    private static final int SEND = 400;

    /** A Raft server that answers each entry only when the test says so. */
    private static final class FakeRaft implements EntryCoalescer.Sender {
        final List<byte[]> sent = new ArrayList<>();
        final List<CompletableFuture<Throwable>> replies = new ArrayList<>();

        @Override
        public synchronized CompletableFuture<Throwable> send(byte[] entry, String what) {
            sent.add(entry);
            CompletableFuture<Throwable> reply = new CompletableFuture<>();
            replies.add(reply);
            return reply;
        }

        /** The shard entries of Raft entry {@code i}, unwrapped. */
        List<byte[]> entriesOf(int i) {
            byte[] raw = sent.get(i);
            return EntryBatch.isBatch(raw) ? EntryBatch.decode(raw) : List.of(raw);
        }
    }

    private final FakeRaft raft = new FakeRaft();

    /** A coalescer with one entry ("first", 10 bytes) in flight. */
    private EntryCoalescer busy(int sendBytes) {
        EntryCoalescer coalescer = new EntryCoalescer(raft, CAP, sendBytes);
        coalescer.add(entry(1, 10), "first");
        assertEquals(1, raft.sent.size());
        return coalescer;
    }

    /** A version-1 shard entry's stand-in of {@code size} bytes, told apart by {@code tag}. */
    private static byte[] entry(int tag, int size) {
        byte[] entry = new byte[size];
        Arrays.fill(entry, (byte) tag);
        entry[0] = ShardEntry.VERSION;
        return entry;
    }

    @Test
    void shouldSendALoneEntryAtOnceAndAsItIs() {
        EntryCoalescer coalescer = new EntryCoalescer(raft, CAP, SEND);
        byte[] lone = entry(7, 50);
        CompletableFuture<Throwable> outcome = coalescer.add(lone, "lone");
        assertEquals(1, raft.sent.size());
        assertArrayEquals(lone, raft.sent.get(0), "no batch around a single entry");
        assertFalse(outcome.isDone());
        raft.replies.get(0).complete(null);
        assertNull(outcome.join());
        assertEquals(0, coalescer.inFlight());
    }

    @Test
    void shouldCoalesceWhatWaitsWhileOneIsInFlightInOrder() {
        EntryCoalescer coalescer = busy(SEND);
        List<CompletableFuture<Throwable>> waiting = new ArrayList<>();
        for (int tag = 2; tag <= 5; tag++) {
            waiting.add(coalescer.add(entry(tag, 50), "entry " + tag));
        }
        assertEquals(1, raft.sent.size(), "the others wait for the first submission's reply (200 bytes < " + SEND + ")");
        raft.replies.get(0).complete(null);
        assertEquals(2, raft.sent.size());
        List<byte[]> batch = raft.entriesOf(1);
        assertEquals(4, batch.size());
        for (int i = 0; i < 4; i++) {
            assertArrayEquals(entry(i + 2, 50), batch.get(i), "the batch keeps the order of the adds");
        }
        assertFalse(waiting.get(0).isDone());
        raft.replies.get(1).complete(null);
        waiting.forEach(w -> assertNull(w.join()));
    }

    @Test
    void shouldSendWithoutWaitingOnceSendBytesWait() {
        EntryCoalescer coalescer = busy(SEND);
        coalescer.add(entry(2, 200), "second");
        assertEquals(1, raft.sent.size());
        coalescer.add(entry(3, 200), "third");
        assertEquals(2, raft.sent.size(), "400 bytes waited: sent while the first is still in flight");
        assertEquals(2, raft.entriesOf(1).size());
        assertEquals(2, coalescer.inFlight());
    }

    @Test
    void shouldSplitAnOversizedMixAndSendAnEntryAboveTheCapAloneAndAsItIs() {
        EntryCoalescer coalescer = busy(CAP);
        byte[] big = entry(3, CAP + 1);
        coalescer.add(entry(2, 600), "a");
        coalescer.add(big, "big");
        coalescer.add(entry(4, 600), "b");
        coalescer.add(entry(5, 300), "c");
        coalescer.add(entry(6, 300), "d");
        assertEquals(4, raft.sent.size(), "a cap's worth waited each time: first; a; big; b+c; d waits");
        for (int i = 0; i < 3; i++) {
            raft.replies.get(i).complete(null);
        }
        assertEquals(4, raft.sent.size(), "d waits while b+c is in flight: less than sendBytes waits");
        raft.replies.get(3).complete(null);
        assertEquals(5, raft.sent.size(), "d goes once nothing is in flight");
        assertArrayEquals(entry(2, 600), raft.sent.get(1));
        assertArrayEquals(big, raft.sent.get(2), "above the cap: alone and unwrapped");
        assertEquals(List.of(4, 5), raft.entriesOf(3).stream().map(e -> (int) e[1]).toList());
        assertArrayEquals(entry(6, 300), raft.sent.get(4));
        for (int i = 0; i < raft.sent.size(); i++) {
            assertTrue(raft.sent.get(i).length <= CAP + 1 + EntryBatch.HEADER_BYTES + 2 * EntryBatch.PER_ENTRY_BYTES);
        }
    }

    /** Rule R8: a dead-letter's copy is stored under its entry's log index, so it never shares an entry. */
    @Test
    void shouldSendADeadLetterAlone() {
        EntryCoalescer coalescer = busy(SEND);
        coalescer.add(entry(2, 10), "a");
        byte[] deadLetter = ShardEntry.encodeDeadLetter(1, 9, "dlq", new ShardEntry.DeadLetterCopy("q", 5, 1, 1, new byte[0], new byte[3]));
        coalescer.add(deadLetter, "dead-letter");
        coalescer.add(entry(3, 10), "b");
        raft.replies.get(0).complete(null);
        raft.replies.get(1).complete(null);
        raft.replies.get(2).complete(null);
        assertEquals(4, raft.sent.size());
        assertArrayEquals(entry(2, 10), raft.sent.get(1));
        assertArrayEquals(deadLetter, raft.sent.get(2));
        assertArrayEquals(entry(3, 10), raft.sent.get(3));
    }

    /** Rule S1: Raft's refusal of a batch is every entry's in it. */
    @Test
    void shouldHandRaftsRefusalToEveryEntryOfTheBatch() {
        EntryCoalescer coalescer = busy(SEND);
        CompletableFuture<Throwable> a = coalescer.add(entry(2, 10), "a");
        CompletableFuture<Throwable> b = coalescer.add(entry(3, 10), "b");
        raft.replies.get(0).complete(null);
        IllegalStateException notLeader = new IllegalStateException("not the leader");
        raft.replies.get(1).complete(notLeader);
        assertSame(notLeader, a.join());
        assertSame(notLeader, b.join());
        assertEquals(0, coalescer.inFlight());
    }

    @Test
    void shouldSendEachEntryAloneAndAtOnceWhileTheEntryLevelIsBelowBatches() {
        java.util.concurrent.atomic.AtomicBoolean batches = new java.util.concurrent.atomic.AtomicBoolean(false);
        EntryCoalescer coalescer = new EntryCoalescer(raft, CAP, SEND, batches::get);
        for (int tag = 1; tag <= 4; tag++) {
            coalescer.add(entry(tag, 50), "entry " + tag);
        }
        assertEquals(4, raft.sent.size(), "every entry is submitted at once, none waits for a reply");
        for (int i = 0; i < 4; i++) {
            assertFalse(EntryBatch.isBatch(raft.sent.get(i)), "a node below level 5 cannot read a batch");
            assertEquals(i + 1, raft.sent.get(i)[1], "in the order added");
        }
        assertEquals(4, coalescer.inFlight());
        batches.set(true); // the level was raised to 5: what waits from now on is coalesced again
        coalescer.add(entry(5, 50), "entry 5");
        coalescer.add(entry(6, 50), "entry 6");
        assertEquals(4, raft.sent.size(), "entries wait while others are in flight");
        for (int i = 0; i < 3; i++) {
            raft.replies.get(i).complete(null);
        }
        assertEquals(4, raft.sent.size(), "one is still in flight");
        raft.replies.get(3).complete(null);
        assertEquals(5, raft.sent.size());
        assertTrue(EntryBatch.isBatch(raft.sent.get(4)));
        assertEquals(2, raft.entriesOf(4).size());
    }
}
