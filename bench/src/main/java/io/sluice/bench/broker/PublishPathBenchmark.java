package io.sluice.bench.broker;

import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.DefaultEventLoopGroup;
import io.netty.channel.EventLoopGroup;
import io.sluice.bench.storage.StorageBenchmarkBase;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.config.ConfigLoader;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.ProducerLink;
import io.sluice.broker.queue.QueueManager;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.FlowState;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.PublishFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.Directories;
import io.sluice.storage.MessageStore;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The broker's publish path on one queue, with idempotent publishing ({@code queues.dedup-enabled})
 * on and off: PUBLISH frames of {@code messagesPerFrame} 256-byte messages of one producer, handed to
 * {@link BrokerQueue#publish} as a connection's session hands them, through the queue's event loop
 * (the producer table's check and record per message, the append, the confirm) to their CONFIRMs.
 * Durability {@code never}, so the score is the path's own cost and not the disk's; the producer
 * checkpoints are still written, as in production. Each invocation publishes {@value #MESSAGES}
 * messages of new sequences and waits for every confirm; the score is messages per second. The
 * frames are built before each invocation, untimed. A fresh store and queue per iteration keeps
 * disk use bounded.
 */
@State(Scope.Benchmark)
public class PublishPathBenchmark extends StorageBenchmarkBase {
    static final int MESSAGES = 8192;
    private static final long PRODUCER = 0x5EED_0001L;

    @Param({"true", "false"})
    public boolean dedup;

    @Param({"1", "64"})
    public int messagesPerFrame;

    private final byte[] payload = payload();
    private final Confirms confirms = new Confirms();
    private Path directory;
    private MessageStore store;
    private EventLoopGroup loop;
    private QueueManager queues;
    private BrokerQueue queue;
    private PublishFrame[] frames;
    private long nextSequence;

    @Setup(Level.Iteration)
    public void open() {
        directory = newDataDirectory("publish");
        BrokerConfig config = new ConfigLoader().load(null, Map.of(
                "storage.durability", "never",
                "storage.reserved-disk-bytes", Long.toString(64L << 20),
                "queues.dedup-enabled", Boolean.toString(dedup)));
        store = MessageStore.open(directory, config.storeConfig());
        loop = new DefaultEventLoopGroup(1);
        queues = new QueueManager(store, loop, config.queues, config.broker.publishWindowMessages);
        queue = queues.declare("bench", QueueSettings.EMPTY);
        nextSequence = 1;
    }

    @TearDown(Level.Iteration)
    public void close() {
        queues.close();
        loop.shutdownGracefully(0, 5, TimeUnit.SECONDS).syncUninterruptibly();
        store.close();
        Directories.deleteRecursively(directory);
    }

    @Setup(Level.Invocation)
    public void buildFrames() {
        frames = new PublishFrame[MESSAGES / messagesPerFrame];
        for (int f = 0; f < frames.length; f++) {
            PublishFrameBuilder builder = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, "bench");
            for (int m = 0; m < messagesPerFrame; m++) {
                builder.add(PRODUCER, nextSequence++, List.of(), payload);
            }
            frames[f] = builder.build();
        }
        confirms.expect(frames.length * messagesPerFrame);
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public long publish() throws InterruptedException {
        for (PublishFrame frame : frames) {
            queue.publish(confirms, frame);
        }
        return confirms.await();
    }

    /** The producer's connection as the queue sees it: counts what was confirmed and wakes the benchmark once all was. */
    static final class Confirms implements ProducerLink {
        private long expected;
        private long confirmed;
        private String refusal;

        synchronized void expect(long messages) {
            expected = messages;
            confirmed = 0;
        }

        synchronized long await() throws InterruptedException {
            while (confirmed < expected && refusal == null) {
                wait();
            }
            if (refusal != null) {
                throw new IllegalStateException("the queue refused a publish: " + refusal);
            }
            return confirmed;
        }

        @Override
        public synchronized void confirm(long producerId, List<IdRange> sequences) {
            for (IdRange r : sequences) {
                confirmed += r.to() - r.from() + 1;
            }
            if (confirmed >= expected) {
                notifyAll();
            }
        }

        @Override
        public synchronized void refuse(long producerId, IdRange sequences, ErrorCode code, String message) {
            refusal = code + ": " + message;
            notifyAll();
        }

        @Override
        public void publishCredit(int messages, long windowBytes, long heldBytes) {
        }

        @Override
        public int windowBytes(int headersLength, int payloadLength) {
            return headersLength + payloadLength;
        }

        @Override
        public void flow(String queue, FlowState state, String reason) {
        }

        @Override
        public void flush() {
        }

        @Override
        public String describe() {
            return "the benchmark's producer";
        }

        @Override
        public String id() {
            return "bench";
        }

        @Override
        public boolean isActive() {
            return true;
        }
    }
}
