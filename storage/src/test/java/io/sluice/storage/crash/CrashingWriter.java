package io.sluice.storage.crash;

import io.sluice.storage.DurabilityMode;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.durability.FileForcer;
import io.sluice.storage.segment.SegmentClock;
import io.sluice.storage.segment.SegmentRollCycle;
import net.openhft.chronicle.queue.ExcerptAppender;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueue;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueueBuilder;
import net.openhft.chronicle.wire.DocumentContext;

import java.io.BufferedWriter;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Child process of the crash tests: appends forever until killed, and reports on stdout what the
 * store has promised, so that the parent can check the promise after a kill -9.
 *
 * <p>Arguments: {@code <data dir> <mixed|reclaim|hold-lock|create|unforced-tail> <first sequence>}. Protocol on stdout (one line each,
 * flushed before the step it announces happens):
 * <pre>
 * confirmed S      every message of sequence up to S (from this run) is durable
 * kept S ID        (reclaim mode) message S, id ID, is durable and will never be acked by this run
 * acking S         an ack of S is about to be called (it may or may not have happened at the kill)
 * acked S          the ack of S returned
 * holding          (hold-lock mode) the child is inside Chronicle's writingDocument: it holds the write lock
 * created NAME     (create mode) queue NAME was created: createQueues returned it
 * written S        (unforced-tail mode) every message up to S is appended; those after the last confirmed are not forced
 * </pre>
 * Mixed mode acks every sequence divisible by 3, with a 4 KiB ack journal, so the journal rotates
 * all the time; reclaim mode acks all but every 50th, with 1 MiB segments, so reclaim and straggler
 * relocation run all the time. Hold-lock mode appends {@link #HOLD_LOCK_MESSAGES} messages, confirms
 * them, then opens a document on the queue's segments and stays inside it, holding Chronicle's write
 * lock, until it is killed: the state a kill -9 in the middle of an append leaves. Create mode creates
 * queues in groups until it is killed, and appends nothing. Unforced-tail mode ({@link #appendAnUnforcedTail})
 * leaves records in the page cache that no force made durable, across a roll, and the disk image of
 * what was forced next to the data directory.
 */
public final class CrashingWriter {
    static final String QUEUE = "q";
    static final int MAX_IN_FLIGHT = 20_000;
    static final int HOLD_LOCK_MESSAGES = 1_000;
    static final int CREATE_GROUP = 20;
    static final int TAIL_FORCED_MESSAGES = 500;
    static final int TAIL_UNFORCED_MESSAGES = 1_500;

    private CrashingWriter() {
    }

    static StoreConfig config(String mode) {
        StoreConfig.Builder builder = StoreConfig.builder()
                .durability(DurabilityMode.ALWAYS)
                .maxMessageBytes(64 << 10)
                .reservedDiskBytes(64L << 20);
        if (mode.equals("unforced-tail")) {
            builder.segmentBytes(StoreConfig.MIN_SEGMENT_BYTES); // the unforced records span a roll
        } else if (mode.equals("reclaim")) {
            // Relocation at once, as before the wait existed: kills must land in the middle of it.
            builder.segmentBytes(StoreConfig.MIN_SEGMENT_BYTES).relocateAfterMs(0);
        } else {
            // The smallest ack journal: it rotates (a checkpoint, and the journal file reused for the
            // next generation) every couple of hundred acks, so kills land in and around rotations.
            builder.segmentBytes(4L << 20).ackJournalBytes(4096);
        }
        return builder.build();
    }

    static boolean acks(String mode, long seq) {
        return mode.equals("reclaim") ? seq % 50 != 0 : seq % 3 == 0;
    }

    /** The payload of message {@code seq}: the sequence, then bytes drawn from a generator seeded by it. */
    static byte[] payload(String mode, long seq) {
        SplittableRandom random = new SplittableRandom(seq);
        int length = mode.equals("reclaim") ? 600 + random.nextInt(800) : 16 + random.nextInt(400);
        byte[] b = new byte[length];
        random.nextBytes(b);
        for (int k = 0; k < 8; k++) {
            b[k] = (byte) (seq >>> (8 * k));
        }
        return b;
    }

    static long seqOf(byte[] payload) {
        long seq = 0;
        for (int k = 0; k < 8; k++) {
            seq |= (payload[k] & 0xFFL) << (8 * k);
        }
        return seq;
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        String mode = args[1];
        long firstSeq = Long.parseLong(args[2]);
        // The protocol owns stdout; the store's log lines go to stderr (logback's console appender
        // looks System.out up on every write).
        System.setOut(System.err);
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(new FileOutputStream(FileDescriptor.out), StandardCharsets.US_ASCII), 1 << 16);
        if (mode.equals("unforced-tail")) {
            appendAnUnforcedTail(dir, firstSeq, out);
            return;
        }
        MessageStore store = MessageStore.open(dir, config(mode));
        if (mode.equals("create")) {
            createQueuesForever(store, firstSeq, out);
            return;
        }
        QueueStore queue = store.createQueue(QUEUE);
        // From the second round on the queue is reopened without a producer checkpoint; none is kept (rule R6).
        queue.producerStateCoveredThrough(Long.MAX_VALUE);
        if (mode.equals("hold-lock")) {
            holdWriteLock(queue, firstSeq, out);
            return;
        }
        LinkedBlockingQueue<long[]> appended = new LinkedBlockingQueue<>();
        Semaphore inFlight = new Semaphore(MAX_IN_FLIGHT);

        Thread confirmer = new Thread(() -> {
            try {
                confirmLoop(mode, queue, appended, inFlight, out);
            } catch (Throwable t) {
                t.printStackTrace();
                Runtime.getRuntime().halt(3);
            }
        }, "confirmer");
        confirmer.setDaemon(true);
        confirmer.start();

        for (long seq = firstSeq; ; seq++) {
            inFlight.acquire();
            long id = queue.append(null, payload(mode, seq));
            appended.add(new long[] {seq, id});
        }
    }

    private static void confirmLoop(String mode, QueueStore queue, LinkedBlockingQueue<long[]> appended, Semaphore inFlight,
                                    BufferedWriter out) throws Exception {
        List<long[]> batch = new ArrayList<>();
        while (true) {
            batch.clear();
            batch.add(appended.take());
            appended.drainTo(batch);
            long[] last = batch.get(batch.size() - 1);
            queue.whenDurable(last[1]).get();
            List<long[]> toAck = new ArrayList<>();
            for (long[] m : batch) {
                if (acks(mode, m[0])) {
                    toAck.add(m);
                } else if (mode.equals("reclaim")) {
                    line(out, "kept " + m[0] + " " + m[1]);
                }
            }
            line(out, "confirmed " + last[0]);
            for (long[] m : toAck) {
                line(out, "acking " + m[0]);
            }
            out.flush();
            for (long[] m : toAck) {
                queue.ack(m[1]);
            }
            for (long[] m : toAck) {
                line(out, "acked " + m[0]);
            }
            out.flush();
            inFlight.release(batch.size());
        }
    }

    /**
     * Create mode: creates groups of {@link #CREATE_GROUP} queues, {@code c-<group>-<i>} from group
     * {@code firstGroup} on, and reports each queue once {@code createQueues} returned it.
     */
    private static void createQueuesForever(MessageStore store, long firstGroup, BufferedWriter out) throws IOException {
        for (long group = firstGroup; ; group++) {
            List<String> names = new ArrayList<>();
            for (int i = 0; i < CREATE_GROUP; i++) {
                names.add("c-" + group + "-" + i);
            }
            List<java.util.concurrent.CompletableFuture<QueueStore>> created = store.createQueues(names);
            for (int i = 0; i < CREATE_GROUP; i++) {
                created.get(i).join();
                line(out, "created " + names.get(i));
            }
            out.flush();
        }
    }

    private static void holdWriteLock(QueueStore queue, long firstSeq, BufferedWriter out) throws Exception {
        long last = -1;
        for (long seq = firstSeq; seq < firstSeq + HOLD_LOCK_MESSAGES; seq++) {
            last = queue.append(null, payload("hold-lock", seq));
        }
        queue.whenDurable(last).get();
        line(out, "confirmed " + (firstSeq + HOLD_LOCK_MESSAGES - 1));
        out.flush();
        // A second Chronicle instance on the same files, as a second writer process would have: its
        // writingDocument takes the write lock in metadata.cq4t and keeps it until the document closes.
        List<Integer> segments = queue.segmentNumbers();
        SingleChronicleQueue chronicle = SingleChronicleQueueBuilder.single(queue.segmentDirectory().toFile())
                .rollCycle(SegmentRollCycle.INSTANCE)
                .timeProvider(new SegmentClock(segments.get(segments.size() - 1)))
                .build();
        ExcerptAppender appender = chronicle.createAppender();
        DocumentContext document = appender.writingDocument();
        document.wire().bytes().write(new byte[100]);
        line(out, "holding");
        out.flush();
        while (document.isOpen()) {
            Thread.sleep(60_000); // until the parent kills this process
        }
    }

    /** Where unforced-tail mode leaves the image of what its store forced: next to the data directory. */
    static Path forcedImage(Path dataDirectory) {
        return dataDirectory.resolveSibling(dataDirectory.getFileName() + ".forced");
    }

    /**
     * Unforced-tail mode: appends {@link #TAIL_FORCED_MESSAGES} and waits until they are durable; then
     * stops every further force (the forcer blocks the flusher for good), writes the disk image of what
     * was forced ({@link ForcedDiskImage}) to {@link #forcedImage}, and appends
     * {@link #TAIL_UNFORCED_MESSAGES} more, across a roll (1 MiB segments, messages of about 1 KiB), which
     * stay in the page cache only. Then it waits to be killed.
     */
    private static void appendAnUnforcedTail(Path dir, long firstSeq, BufferedWriter out) throws Exception {
        ForcedDiskImage disk = new ForcedDiskImage(dir);
        CountDownLatch never = new CountDownLatch(1);
        AtomicBoolean held = new AtomicBoolean();
        FileForcer holding = new FileForcer() {
            private void holdIfAsked() {
                while (held.get()) {
                    try {
                        never.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            }

            @Override
            public void force(FileChannel channel, Path file) throws IOException {
                holdIfAsked();
                disk.force(channel, file);
            }

            @Override
            public void forceDirectory(FileChannel channel, Path directory) throws IOException {
                holdIfAsked();
                disk.forceDirectory(channel, directory);
            }

            @Override
            public void forcingMapped(Path file) {
                holdIfAsked();
                disk.forcingMapped(file);
            }
        };
        MessageStore store = MessageStore.open(dir, config("unforced-tail"), holding);
        QueueStore queue = store.createQueue(QUEUE);
        long seq = firstSeq;
        long last = -1;
        for (; seq < firstSeq + TAIL_FORCED_MESSAGES; seq++) {
            last = queue.append(null, tailPayload(seq));
        }
        queue.whenDurable(last).get();
        held.set(true);
        disk.build(forcedImage(dir));
        line(out, "confirmed " + (seq - 1));
        out.flush();
        for (; seq < firstSeq + TAIL_FORCED_MESSAGES + TAIL_UNFORCED_MESSAGES; seq++) {
            queue.append(null, tailPayload(seq));
        }
        line(out, "written " + (seq - 1));
        out.flush();
        never.await(); // until the parent kills this process
    }

    /** A message of unforced-tail mode: about 1 KiB, its first 8 bytes its sequence. */
    static byte[] tailPayload(long seq) {
        byte[] b = payload("mixed", seq);
        return Arrays.copyOf(b, 1_000);
    }

    private static void line(BufferedWriter out, String text) throws IOException {
        out.write(text);
        out.write('\n');
    }
}
