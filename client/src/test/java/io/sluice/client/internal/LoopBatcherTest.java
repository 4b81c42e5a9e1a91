package io.sluice.client.internal;

import org.junit.jupiter.api.Test;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LoopBatcherTest {
    /** A loop that keeps the tasks it is given until the test runs them, on the test's thread. */
    private static final class ManualLoop implements java.util.concurrent.Executor {
        final Queue<Runnable> tasks = new ArrayDeque<>();
        volatile boolean rejecting;

        @Override
        public synchronized void execute(Runnable task) {
            if (rejecting) {
                throw new RejectedExecutionException("shut down");
            }
            tasks.add(task);
        }

        synchronized Runnable next() {
            return tasks.poll();
        }

        synchronized int pending() {
            return tasks.size();
        }

        void runAll() {
            Runnable task;
            while ((task = next()) != null) {
                task.run();
            }
        }
    }

    /** Records what the batcher hands over; "|" marks the end of a batch. */
    private static final class Recorder implements LoopBatcher.Sink<Integer> {
        final List<String> events = new ArrayList<>();
        final List<Integer> rejected = new ArrayList<>();
        int failOn = -1;

        @Override
        public void onLoop(Integer item) {
            if (item == failOn) {
                throw new IllegalStateException("boom on " + item);
            }
            events.add(String.valueOf(item));
        }

        @Override
        public void endOfBatch() {
            events.add("|");
        }

        @Override
        public synchronized void rejected(Integer item) {
            rejected.add(item);
        }
    }

    @Test
    void shouldScheduleOneTaskForABurstAndHandItOverInOrderWithOneEndOfBatch() {
        ManualLoop loop = new ManualLoop();
        Recorder sink = new Recorder();
        LoopBatcher<Integer> batcher = new LoopBatcher<>(loop, sink);
        for (int i = 0; i < 1000; i++) {
            batcher.submit(i);
        }
        assertEquals(1, loop.pending(), "one drain task for the whole burst");
        loop.runAll();
        List<String> expected = new ArrayList<>(IntStream.range(0, 1000).mapToObj(String::valueOf).toList());
        expected.add("|");
        assertEquals(expected, sink.events);

        batcher.submit(1000);
        assertEquals(1, loop.pending(), "a new burst after the drain gets a new task");
        loop.runAll();
        assertEquals(List.of("1000", "|"), sink.events.subList(1001, 1003));
    }

    @Test
    void shouldYieldTheLoopAfterAFullTurnAndContinueInANewTask() {
        ManualLoop loop = new ManualLoop();
        Recorder sink = new Recorder();
        LoopBatcher<Integer> batcher = new LoopBatcher<>(loop, sink);
        int items = LoopBatcher.MAX_ITEMS_PER_TURN + 10;
        for (int i = 0; i < items; i++) {
            batcher.submit(i);
        }
        loop.next().run();
        assertEquals(LoopBatcher.MAX_ITEMS_PER_TURN + 1, sink.events.size());
        assertEquals("|", sink.events.get(LoopBatcher.MAX_ITEMS_PER_TURN));
        assertEquals(1, loop.pending(), "the rest waits for its own task");
        loop.runAll();
        assertEquals(String.valueOf(items - 1), sink.events.get(sink.events.size() - 2));
        assertEquals(items + 2, sink.events.size());
    }

    @Test
    void shouldKeepDrainingTheOthersWhenOneItemThrows() {
        ManualLoop loop = new ManualLoop();
        Recorder sink = new Recorder();
        sink.failOn = 1;
        LoopBatcher<Integer> batcher = new LoopBatcher<>(loop, sink);
        batcher.submit(0);
        batcher.submit(1);
        batcher.submit(2);
        assertThrows(IllegalStateException.class, () -> loop.next().run());
        assertEquals(List.of("0", "|"), sink.events);
        loop.runAll();
        assertEquals(List.of("0", "|", "2", "|"), sink.events);
        batcher.submit(3);
        loop.runAll();
        assertEquals(List.of("0", "|", "2", "|", "3", "|"), sink.events);
    }

    @Test
    void shouldRejectEveryItemOnceTheLoopRefusesAndNotStrandLaterOnes() {
        ManualLoop loop = new ManualLoop();
        Recorder sink = new Recorder();
        LoopBatcher<Integer> batcher = new LoopBatcher<>(loop, sink);
        batcher.submit(0);
        loop.rejecting = true;
        // The drain for 0 was accepted before the loop shut down, so it still runs, and takes 1 too.
        batcher.submit(1);
        loop.runAll();
        assertEquals(List.of("0", "1", "|"), sink.events);
        batcher.submit(2);
        assertEquals(List.of(2), sink.rejected);
        batcher.submit(3);
        assertEquals(List.of(2, 3), sink.rejected, "the flag was let go after the rejection");
        assertEquals(0, loop.pending());
    }

    @Test
    void shouldHandOverEveryItemOfSeveralThreadsOnceAndInEachThreadsOrder() throws Exception {
        int threads = 4;
        int perThread = 25_000;
        List<int[]> seen = new ArrayList<>();
        ExecutorService loop = Executors.newSingleThreadExecutor();
        ExecutorService senders = Executors.newFixedThreadPool(threads);
        try {
            LoopBatcher<int[]> batcher = new LoopBatcher<>(loop, new LoopBatcher.Sink<>() {
                @Override
                public void onLoop(int[] item) {
                    seen.add(item);
                }

                @Override
                public void endOfBatch() {
                }

                @Override
                public void rejected(int[] item) {
                    throw new AssertionError("rejected " + item[0] + "/" + item[1]);
                }
            });
            List<Future<?>> sent = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                sent.add(senders.submit(() -> {
                    for (int i = 0; i < perThread; i++) {
                        batcher.submit(new int[] {thread, i});
                    }
                }));
            }
            for (Future<?> future : sent) {
                future.get(30, TimeUnit.SECONDS);
            }
            // Every submitted item has a drain queued or running; asking through the loop is race-free.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            int total;
            do {
                total = loop.submit(seen::size).get(30, TimeUnit.SECONDS);
            } while (total < threads * perThread && System.nanoTime() < deadline);
            assertEquals(threads * perThread, total);
            Map<Integer, Integer> next = new HashMap<>();
            for (int[] item : loop.submit(() -> List.copyOf(seen)).get(30, TimeUnit.SECONDS)) {
                int expected = next.getOrDefault(item[0], 0);
                assertEquals(expected, item[1], "thread " + item[0] + " out of order");
                next.put(item[0], expected + 1);
            }
            assertTrue(next.values().stream().allMatch(count -> count == perThread), next.toString());
        } finally {
            senders.shutdownNow();
            loop.shutdownNow();
        }
    }
}
