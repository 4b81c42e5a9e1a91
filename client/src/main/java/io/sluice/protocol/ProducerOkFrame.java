package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

/**
 * PRODUCER_OK (0x26, broker to client): the answer to PRODUCER_INIT.
 *
 * <pre>
 * int64 requestId | int64 producerId | int32 epoch | int64 lastSequence
 * </pre>
 * {@code producerId} is the id the name stands for ({@link ProducerIds#forName}), to be used in PUBLISH;
 * {@code epoch} the instance's epoch (>= 1); {@code lastSequence} the highest sequence of this producer
 * the queue has stored (0 if none, or if the queue no longer tracks it), so that a restarted producer
 * continues after it.
 */
public record ProducerOkFrame(long requestId, long producerId, int epoch, long lastSequence) implements Frame {
    public ProducerOkFrame {
        if (epoch < 1) {
            throw new IllegalArgumentException("epoch " + epoch + " is below the minimum of 1");
        }
    }

    @Override
    public FrameType type() {
        return FrameType.PRODUCER_OK;
    }

    @Override
    public void encodeBody(ByteBuf out) {
        out.writeLong(requestId);
        out.writeLong(producerId);
        out.writeInt(epoch);
        out.writeLong(lastSequence);
    }

    static ProducerOkFrame decodeBody(BodyReader reader) {
        long requestId = reader.readLong("requestId");
        long producerId = reader.readLong("producerId");
        int epoch = reader.readInt("epoch");
        if (epoch < 1) {
            throw reader.malformed("epoch " + epoch + " is below the minimum of 1");
        }
        return new ProducerOkFrame(requestId, producerId, epoch, reader.readLong("lastSequence"));
    }
}
