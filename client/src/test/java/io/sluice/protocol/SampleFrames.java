package io.sluice.protocol;

import io.netty.buffer.ByteBufAllocator;

import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * One or more frames of every type, with edge cases: empty and maximal strings, non-ASCII text, empty
 * batches, headers. Every call builds new frames; batch frames must be released by the caller.
 */
final class SampleFrames {
    static final String UNICODE = "caf\u00e9 \u00fcber \u65e5\u672c \uD83D\uDE80 \u0000 end";
    /** 65535 UTF-8 bytes: 21845 three-byte characters. */
    static final String MAX_STRING = "\u20ac".repeat(21845);

    private SampleFrames() {
    }

    static List<Frame> all(ByteBufAllocator allocator) {
        return List.of(
                new HelloFrame(1, 1, "orders-service", 1 << 20, 5_000, "alice", "s3cret"),
                new HelloFrame(1, 3, UNICODE, 0, 0, "", ""),
                new HelloOkFrame(1, 8 << 20, 10_000, "sluice-1", 10_000, 64L << 20),
                new HelloFrame(1, 1, "tx-client", 0, 0, "", "", HelloFrame.CAPABILITY_TRANSACTIONS | 0x80),
                new HelloOkFrame(1, 1 << 20, 0, "sluice-2", 1, 1024, HelloFrame.CAPABILITY_TRANSACTIONS),
                HeartbeatFrame.INSTANCE,
                new CloseFrame(ErrorCode.NONE, ""),
                new CloseFrame(ErrorCode.HEARTBEAT_TIMEOUT, "no frame for 20000 ms, limit 20000 ms"),
                new DeclareQueueFrame(1, "orders", QueueSettings.EMPTY),
                new DeclareQueueFrame(2, UNICODE, QueueSettings.builder()
                        .maxDeliveries(5).deadLetterQueue("orders.dlq").ackTimeoutMs(30_000)
                        .quotaMessages(100_000, 200_000).quotaBytes(1L << 30, 2L << 30)
                        .overflowPolicy(QueueSettings.OVERFLOW_BLOCK).set("x-future", true).build()),
                new DeclareQueueFrame(3, "orders", QueueSettings.EMPTY, true),
                new DeleteQueueFrame(Long.MAX_VALUE, "orders"),
                new PurgeQueueFrame(-1, MAX_STRING),
                new OkFrame(7),
                new OkFrame(8, 42),
                new ErrorFrame(0, ErrorCode.INTERNAL_ERROR, ""),
                new ErrorFrame(9, 4242, "queue 'x' unknown"),
                new PublishFrameBuilder(allocator, "orders").build(),
                new PublishFrameBuilder(allocator, "orders")
                        .add(1, 1, List.of(), new byte[0])
                        .add(1, 2, List.of(MessageHeader.of("content-type", "text/plain"),
                                new MessageHeader(UNICODE, new byte[] {0, 1, 2})), "hello".getBytes(StandardCharsets.UTF_8))
                        .add(Long.MIN_VALUE, Long.MAX_VALUE, List.of(new MessageHeader("", new byte[0])), new byte[1000])
                        .build(),
                new ConfirmFrame(1, List.of()),
                new ConfirmFrame(1, List.of(new IdRange(1, 100), IdRange.single(200), new IdRange(-5, -5))),
                new PublishErrorFrame(1, new IdRange(3, 4), ErrorCode.QUEUE_BLOCKED, "queue orders is blocked"),
                new FlowFrame("orders", FlowState.FREE, ""),
                new FlowFrame("orders", FlowState.BLOCKED, "quotaHardBytes: 2147483648 stored, limit 2147483648"),
                new PublishCreditFrame(100, 1 << 20),
                new ProducerInitFrame(12, "orders", "order-service-1", ProducerInitFrame.NEW_INSTANCE),
                new ProducerInitFrame(13, "orders", "\u00e9crivain", 7),
                new ProducerOkFrame(12, ProducerIds.forName("order-service-1"), 3, 1041),
                new SubscribeFrame(11, 1, "orders", 1000),
                new CreditFrame(1, 500),
                new DeliverFrameBuilder(allocator, 1).build(),
                new DeliverFrameBuilder(allocator, -7)
                        .add(1, 1, List.of(), "a".getBytes(StandardCharsets.UTF_8))
                        .add(2, 3, List.of(MessageHeader.of("trace", UNICODE)), new byte[300])
                        .build(),
                new AckFrame(1, List.of()),
                new AckFrame(1, List.of(new IdRange(1, 1000))),
                new NackFrame(1, NackAction.REQUEUE, 0, List.of(IdRange.single(5))),
                new NackFrame(1, NackAction.REQUEUE_AFTER_DELAY, 1500, List.of(new IdRange(5, 9), IdRange.single(12))),
                new NackFrame(2, NackAction.REJECT_TO_DEAD_LETTER, 0, List.of()),
                new UnsubscribeFrame(12, 1),
                new TxBeginFrame(1, 0),
                new TxBeginFrame(Long.MIN_VALUE, 60_000),
                new TxPublishFrame(1, new PublishFrameBuilder(allocator, "invoices").build()),
                new TxPublishFrame(-1, new PublishFrameBuilder(allocator, UNICODE)
                        .add(0, 0, List.of(MessageHeader.of("order", "17")), "invoice".getBytes(StandardCharsets.UTF_8))
                        .add(0, 0, List.of(), new byte[500])
                        .build()),
                new TxAckFrame(1, 3, List.of()),
                new TxAckFrame(Long.MAX_VALUE, -3, List.of(new IdRange(1, 10), IdRange.single(12))),
                new TxCommitFrame(14, 1),
                new TxRollbackFrame(15, Long.MAX_VALUE),
                new TxAbortedFrame(1, ErrorCode.TRANSACTION_TIMED_OUT, "transaction 1 was open for 60000 ms, limit 60000 ms"),
                new TxAbortedFrame(2, 4243, UNICODE));
    }
}
