package io.sluice.broker;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.sluice.broker.config.ConfigLoader;
import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Message;
import io.sluice.client.ReconnectPolicy;
import io.sluice.protocol.AckFrame;
import io.sluice.protocol.CloseFrame;
import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.CreditFrame;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.DeleteQueueFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.Frame;
import io.sluice.protocol.HeartbeatFrame;
import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.NackAction;
import io.sluice.protocol.NackFrame;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.ProducerInitFrame;
import io.sluice.protocol.PublishFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.PurgeQueueFrame;
import io.sluice.protocol.QueueSettings;
import io.sluice.protocol.SubscribeFrame;
import io.sluice.protocol.TxAbortedFrame;
import io.sluice.protocol.TxAckFrame;
import io.sluice.protocol.TxBeginFrame;
import io.sluice.protocol.TxCommitFrame;
import io.sluice.protocol.TxPublishFrame;
import io.sluice.protocol.TxRollbackFrame;
import io.sluice.protocol.UnsubscribeFrame;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Throws garbage at a live broker over plain sockets for a few seconds: random bytes, valid frames with
 * flipped bits, cut short, with a wrong length or type, frames before HELLO, huge length headers with no
 * body, half-open and silent connections. Afterwards the broker must still serve a normal client, and its
 * threads, file descriptors and buffers must be back where they were (no Netty LEAK, no ERROR log).
 * The seed is printed; rerun one with {@code -Dsluice.fuzz.seed=N}. {@code -Dsluice.fuzz.seconds=S} fuzzes for S
 * seconds instead of 5 (a longer hunt by hand; at most about 100 within the class's timeout).
 */
@Timeout(120)
class BrokerFuzzTest {
    private static final long FUZZ_NANOS = TimeUnit.SECONDS.toNanos(Long.getLong("sluice.fuzz.seconds", 5));
    private static final int MAX_CONNECTIONS = 3_000;
    private static final int THREADS = 16;

    @TempDir
    Path dir;
    private Broker broker;
    private final ListAppender<ILoggingEvent> logs = new ListAppender<>();
    private final Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);

    @BeforeEach
    void start() {
        logs.start();
        root.addAppender(logs);
        broker = Broker.start(new ConfigLoader().load(null, Map.of("broker.data-dir", dir.resolve("data").toString(),
                "broker.port", "0", "storage.reserved-disk-bytes", "67108864", "broker.handshake-timeout-ms", "1000",
                "broker.max-frame-bytes", "65536", "storage.max-message-bytes", "32768", "metrics.port", "0")));
    }

    @AfterEach
    void stop() {
        root.detachAppender(logs);
        if (broker != null) {
            broker.close();
        }
    }

    @Test
    void shouldSurviveMalformedInputWithoutLeakingThreadsDescriptorsOrBuffers() throws Exception {
        long seed = Long.getLong("sluice.fuzz.seed", System.nanoTime());
        System.out.println("BrokerFuzzTest seed: " + seed + " (rerun with -Dsluice.fuzz.seed=" + seed + ")");
        useNormally("warm-up");
        long filesBefore = openFiles();
        List<String> filesListedBefore = listOpenFiles();
        // Start every worker thread before counting threads: each event loop starts its thread on first use.
        List<Socket> warm = new ArrayList<>();
        for (int i = 0; i < 4 * Runtime.getRuntime().availableProcessors(); i++) {
            warm.add(helloed());
        }
        for (Socket s : warm) {
            s.close();
        }
        TestAwait.until("warm-up sockets closed", () -> openFiles() <= filesBefore + 5);
        int threadsBefore = threadCount();

        AtomicInteger connections = new AtomicInteger();
        AtomicInteger answered = new AtomicInteger();
        long deadline = System.nanoTime() + FUZZ_NANOS;
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        try {
            List<Future<?>> workers = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                Random random = new Random(seed + t);
                workers.add(pool.submit(() -> {
                    while (System.nanoTime() < deadline && connections.incrementAndGet() <= MAX_CONNECTIONS) {
                        if (fuzzOneConnection(random) > 0) {
                            answered.incrementAndGet();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : workers) {
                f.get(60, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        System.out.printf("BrokerFuzzTest: %d connections, %d got an answer; transactions: %d committed, %d rolled back, %d aborted%n",
                Math.min(connections.get(), MAX_CONNECTIONS), answered.get(), broker.transactions().counts().commits(),
                broker.transactions().counts().rollbacks(), broker.transactions().counts().aborts());
        assertTrue(broker.transactions().counts().rollbacks() + broker.transactions().counts().aborts() > 0,
                "the conversations reached the transactions (seed " + seed + ")");

        useNormally("after fuzzing");
        try {
            TestAwait.until("file descriptors back near " + filesBefore, () -> openFiles() <= filesBefore + 5);
        } catch (AssertionError e) {
            List<String> now = listOpenFiles();
            now.removeAll(filesListedBefore);
            throw new AssertionError(e.getMessage() + "; opened since: " + now, e);
        }
        TestAwait.until("threads back near " + threadsBefore + " (now " + threadCount() + ")",
                () -> threadCount() <= threadsBefore + 5);
        forceLeakReports();
        List<String> bad = logs.list.stream()
                .filter(e -> e.getLevel().isGreaterOrEqual(Level.ERROR) || e.getFormattedMessage().contains("LEAK"))
                .map(e -> e.getLevel() + " " + e.getLoggerName() + ": " + e.getFormattedMessage()
                        + (e.getThrowableProxy() == null ? "" : " / " + e.getThrowableProxy().getClassName() + ": "
                        + e.getThrowableProxy().getMessage()))
                .distinct().limit(10).collect(Collectors.toList());
        assertEquals(List.of(), bad, "no ERROR and no LEAK in the broker log (seed " + seed + ")");
    }

    /** One connection with one kind of abuse; returns the bytes the broker sent back before closing or going quiet. */
    private int fuzzOneConnection(Random random) throws IOException {
        try (Socket socket = new Socket("127.0.0.1", broker.port())) {
            socket.setSoTimeout(300);
            socket.setSoLinger(random.nextBoolean(), 0);
            OutputStream out = socket.getOutputStream();
            switch (random.nextInt(10)) {
                case 0 -> out.write(randomBytes(random, random.nextInt(2_000)));
                case 1 -> {
                    out.write(hello());
                    out.write(flipBits(random, validFrame(random)));
                }
                case 2 -> {
                    out.write(hello());
                    byte[] frame = validFrame(random);
                    out.write(frame, 0, random.nextInt(frame.length));
                }
                case 3 -> {
                    out.write(hello());
                    byte[] frame = validFrame(random);
                    int length = switch (random.nextInt(4)) {
                        case 0 -> -random.nextInt(Integer.MAX_VALUE) - 1;
                        case 1 -> random.nextInt(4);
                        case 2 -> frame.length - 4 + random.nextInt(9) - 4;
                        default -> random.nextInt();
                    };
                    putInt(frame, 0, length);
                    out.write(frame);
                }
                case 4 -> {
                    out.write(hello());
                    byte[] frame = validFrame(random);
                    frame[4] = (byte) random.nextInt(256);
                    if (random.nextBoolean()) {
                        frame[5] = (byte) random.nextInt(256);
                    }
                    out.write(frame);
                }
                case 5 -> out.write(validFrame(random));
                case 6 -> {
                    if (random.nextBoolean()) {
                        out.write(hello());
                    }
                    byte[] header = new byte[6];
                    putInt(header, 0, random.nextBoolean() ? Integer.MAX_VALUE : 65_537 + random.nextInt(1 << 24));
                    header[4] = (byte) 0x20;
                    out.write(header);
                }
                case 7 -> {
                    out.write(hello());
                    byte[] frame = validFrame(random);
                    out.write(frame, 0, random.nextInt(frame.length));
                    socket.shutdownOutput();
                }
                case 8 -> {
                    // A conversation: frames that build on each other (a transaction begun, published into,
                    // acked in and committed; a subscription credited and acked), one in five damaged.
                    out.write(hello());
                    for (int i = 0, n = 2 + random.nextInt(30); i < n; i++) {
                        byte[] frame = validFrame(random);
                        out.write(random.nextInt(5) == 0 ? flipBits(random, frame) : frame);
                    }
                }
                default -> {
                    if (random.nextBoolean()) {
                        return 0;
                    }
                }
            }
            out.flush();
            return drain(socket.getInputStream());
        } catch (IOException e) {
            return 0; // reset by the broker while writing: a legitimate answer to garbage
        }
    }

    private static int drain(InputStream in) throws IOException {
        int total = 0;
        byte[] buffer = new byte[4096];
        try {
            for (int n; (n = in.read(buffer)) >= 0; ) {
                total += n;
            }
        } catch (SocketTimeoutException quiet) {
            return total;
        } catch (IOException reset) {
            return total;
        }
        return total;
    }

    private static byte[] randomBytes(Random random, int n) {
        byte[] bytes = new byte[n];
        random.nextBytes(bytes);
        return bytes;
    }

    private static byte[] flipBits(Random random, byte[] frame) {
        int flips = 1 + random.nextInt(8);
        for (int i = 0; i < flips; i++) {
            int bit = random.nextInt(frame.length * 8);
            frame[bit / 8] ^= (byte) (1 << (bit % 8));
        }
        return frame;
    }

    private static void putInt(byte[] b, int at, int v) {
        b[at] = (byte) (v >>> 24);
        b[at + 1] = (byte) (v >>> 16);
        b[at + 2] = (byte) (v >>> 8);
        b[at + 3] = (byte) v;
    }

    private static byte[] hello() {
        return encode(new HelloFrame(1, 1, "fuzz", 0, 0, "", ""));
    }

    private static byte[] validFrame(Random random) {
        // Every frame type a client sends, with ids from a small range so that later frames name what
        // earlier ones opened (a transaction, a subscription, a producer), and frames only the broker
        // sends, which a client must not.
        Frame frame = switch (random.nextInt(21)) {
            case 0 -> new DeclareQueueFrame(random.nextLong(), "fuzz", QueueSettings.EMPTY);
            case 1 -> publish(random);
            case 2 -> new SubscribeFrame(random.nextLong(), random.nextInt(4), "fuzz", 1 + random.nextInt(10));
            case 3 -> new AckFrame(random.nextInt(4), List.of(IdRange.single(random.nextInt(100))));
            case 4 -> {
                NackAction action = NackAction.values()[random.nextInt(NackAction.values().length)];
                yield new NackFrame(random.nextInt(4), action, action == NackAction.REQUEUE_AFTER_DELAY ? random.nextInt(1_000) : 0,
                        List.of(IdRange.single(random.nextInt(100))));
            }
            case 5 -> new CreditFrame(random.nextInt(4), random.nextInt(100));
            case 6 -> new UnsubscribeFrame(random.nextLong(), random.nextInt(4));
            case 7 -> new PurgeQueueFrame(random.nextLong(), "fuzz-other");
            case 8 -> HeartbeatFrame.INSTANCE;
            case 9 -> new CloseFrame(ErrorCode.NONE, "bye");
            case 10 -> new TxBeginFrame(1 + random.nextInt(4), random.nextInt(3) == 0 ? random.nextInt(Integer.MAX_VALUE) : 1 + random.nextInt(60_000));
            case 11 -> new TxPublishFrame(1 + random.nextInt(4), publish(random));
            case 12 -> new TxAckFrame(1 + random.nextInt(4), random.nextInt(4), List.of(IdRange.single(random.nextInt(100))));
            case 13 -> new TxCommitFrame(random.nextLong(), 1 + random.nextInt(4));
            case 14 -> new TxRollbackFrame(random.nextLong(), 1 + random.nextInt(4));
            case 15 -> new ProducerInitFrame(random.nextLong(), "fuzz", "fuzz-producer-" + random.nextInt(3), random.nextInt(3) - 1);
            case 16 -> new DeleteQueueFrame(random.nextLong(), "fuzz-other");
            case 17 -> new TxAbortedFrame(1 + random.nextInt(4), ErrorCode.UNKNOWN_TRANSACTION, "a broker's frame");
            case 18 -> new OkFrame(random.nextLong());
            case 19 -> new ConfirmFrame(random.nextLong(), List.of(IdRange.single(random.nextInt(100))));
            default -> new HelloFrame(1, 1, "again", 0, 0, "", "");
        };
        return encode(frame);
    }

    private static PublishFrame publish(Random random) {
        PublishFrameBuilder b = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, "fuzz");
        for (int i = 0, n = 1 + random.nextInt(3); i < n; i++) {
            b.add(random.nextLong(), i, List.of(), randomBytes(random, random.nextInt(64)));
        }
        return b.build();
    }

    private static byte[] encode(Frame frame) {
        try {
            return FrameBytes.of(frame);
        } finally {
            io.netty.util.ReferenceCountUtil.release(frame);
        }
    }

    private Socket helloed() throws IOException {
        Socket s = new Socket("127.0.0.1", broker.port());
        s.getOutputStream().write(hello());
        s.setSoTimeout(5_000);
        if (s.getInputStream().read() < 0) {
            throw new AssertionError("no HELLO_OK");
        }
        return s;
    }

    /** A normal client connects, declares, publishes and consumes. */
    /**
     * A normal client's round trip on "normal" and on "fuzz" (the queue the garbage names), then a
     * committed transaction; before fuzzing this also opens every store file the fuzz may make the
     * broker open (those queues' segments, the transaction log), so the descriptors counted after are
     * comparable.
     */
    private void useNormally(String when) throws Exception {
        try (Connection c = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                .reconnectPolicy(ReconnectPolicy.DISABLED).build())) {
            for (String queue : List.of("normal", "fuzz")) {
                c.declareQueue(queue, QueueSettings.EMPTY);
                c.purgeQueue(queue); // what the fuzz left there
                c.createProducer(queue, io.sluice.client.ProducerOptions.DEFAULT).send(Payloads.of(42));
                Consumer consumer = c.subscribe(queue, ConsumerOptions.DEFAULT);
                Message m = consumer.receive(Duration.ofSeconds(10));
                assertTrue(m != null, "a normal client consumes from " + queue + " " + when);
                assertEquals(42, Payloads.sequence(m.payload()));
                m.ack();
                consumer.close();
            }
            try (io.sluice.client.Transaction tx = c.transaction()) {
                tx.publish("normal", Payloads.of(43));
                tx.commit();
            }
            Consumer consumer = c.subscribe("normal", ConsumerOptions.DEFAULT);
            Message m = consumer.receive(Duration.ofSeconds(10));
            assertTrue(m != null, "a normal client's transaction commits " + when);
            assertEquals(43, Payloads.sequence(m.payload()));
            m.ack();
        }
    }

    private static int threadCount() {
        return ManagementFactory.getThreadMXBean().getThreadCount();
    }

    private static List<String> listOpenFiles() {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.map(fd -> {
                try {
                    return Files.readSymbolicLink(fd).toString();
                } catch (IOException gone) {
                    return "closed";
                }
            }).collect(Collectors.toCollection(ArrayList::new));
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static long openFiles() {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.count();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** Leaks are reported when a leaked buffer is collected and a later buffer is tracked. */
    private static void forceLeakReports() {
        for (int i = 0; i < 5; i++) {
            System.gc();
            for (int j = 0; j < 200; j++) {
                PooledByteBufAllocator.DEFAULT.buffer(64).release();
                ByteBufAllocator.DEFAULT.directBuffer(64).release();
            }
        }
    }
}
