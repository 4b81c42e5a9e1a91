package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

import java.nio.charset.StandardCharsets;

/**
 * PRODUCER_INIT (0x25, client to broker): registers an instance of a named producer on a queue, so that
 * its id and sequences survive the process that publishes (docs/protocol.md, "Idempotent publishing").
 * Answered by PRODUCER_OK, or ERROR: PRODUCER_FENCED when a newer instance registered since the epoch
 * being resumed, INVALID_PRODUCER for a bad name.
 *
 * <pre>
 * int64 requestId | string queue | string producerName (1..255 bytes of UTF-8) | int32 epoch
 * </pre>
 * {@code epoch} is -1 for a new instance (the broker gives it the next epoch, fencing every older one), or
 * the epoch a PRODUCER_OK gave this instance, to resume it on a new connection.
 */
public record ProducerInitFrame(long requestId, String queue, String producerName, int epoch) implements Frame {
    /** The longest producer name, in UTF-8 bytes. */
    public static final int MAX_NAME_BYTES = 255;
    public static final int NEW_INSTANCE = -1;

    public ProducerInitFrame {
        WireFormat.checkString("queue", queue);
        WireFormat.checkString("producerName", producerName);
        if (epoch < NEW_INSTANCE) {
            throw new IllegalArgumentException("epoch " + epoch + " is below -1");
        }
    }

    /** Why {@code name} cannot name a producer, or null if it can. */
    public static String nameProblem(String name) {
        int bytes = name.getBytes(StandardCharsets.UTF_8).length;
        if (bytes == 0) {
            return "the producer name is empty";
        }
        if (bytes > MAX_NAME_BYTES) {
            return "the producer name is " + bytes + " bytes of UTF-8, more than the " + MAX_NAME_BYTES + " allowed";
        }
        return null;
    }

    @Override
    public FrameType type() {
        return FrameType.PRODUCER_INIT;
    }

    @Override
    public void encodeBody(ByteBuf out) {
        out.writeLong(requestId);
        WireFormat.writeString(out, queue);
        WireFormat.writeString(out, producerName);
        out.writeInt(epoch);
    }

    static ProducerInitFrame decodeBody(BodyReader reader) {
        long requestId = reader.readLong("requestId");
        String queue = reader.readString("queue");
        String name = reader.readString("producerName");
        int epoch = reader.readInt("epoch");
        if (epoch < NEW_INSTANCE) {
            throw new ProtocolException(ErrorCode.MALFORMED_FRAME, "PRODUCER_INIT epoch " + epoch + " is below -1");
        }
        return new ProducerInitFrame(requestId, queue, name, epoch);
    }
}
