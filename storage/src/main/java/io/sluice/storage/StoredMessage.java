package io.sluice.storage;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * A message read from a queue. Instances handed out by a {@link QueueReader} are reused: they are
 * valid until the reader's next call; {@link #copy()} detaches one. Not thread-safe.
 */
public final class StoredMessage {
    long id;
    long physicalId;
    boolean relocated;
    boolean transactional;
    int deliveryCount;
    long producerId;
    long producerSequence;
    long timestampMillis;
    byte[] array;
    int headersOffset;
    int headersLength;
    int payloadOffset;
    int payloadLength;

    StoredMessage() {
    }

    /** The message's id: the store index it was first appended at, kept across relocation. Acks name this. */
    public long id() {
        return id;
    }

    /** Where the record lives now; differs from {@link #id()} only for a relocated straggler. */
    public long physicalId() {
        return physicalId;
    }

    /** True when this record is a straggler moved forward from an older segment (see docs/storage.md). */
    public boolean relocated() {
        return relocated;
    }

    /**
     * True when a transaction staged this record ({@link #producerId()} is its number): the broker
     * delivers it only if that transaction committed (docs/transactions.md).
     */
    public boolean transactional() {
        return transactional;
    }

    /** How many times the broker recorded a delivery of this message (persisted; only ever grows). */
    public int deliveryCount() {
        return deliveryCount;
    }

    public long producerId() {
        return producerId;
    }

    public long producerSequence() {
        return producerSequence;
    }

    /** When the store appended the message, in epoch milliseconds of the store's clock. */
    public long timestampMillis() {
        return timestampMillis;
    }

    public int headersLength() {
        return headersLength;
    }

    public int payloadLength() {
        return payloadLength;
    }

    /** A read-only view of the headers, valid while this instance is. */
    public ByteBuffer headers() {
        return ByteBuffer.wrap(array, headersOffset, headersLength).slice().asReadOnlyBuffer();
    }

    /** A read-only view of the payload, valid while this instance is. */
    public ByteBuffer payload() {
        return ByteBuffer.wrap(array, payloadOffset, payloadLength).slice().asReadOnlyBuffer();
    }

    /** The backing array and offsets, for copying without a view object. */
    public byte[] array() {
        return array;
    }

    public int headersOffset() {
        return headersOffset;
    }

    public int payloadOffset() {
        return payloadOffset;
    }

    public byte[] payloadBytes() {
        return Arrays.copyOfRange(array, payloadOffset, payloadOffset + payloadLength);
    }

    public byte[] headersBytes() {
        return Arrays.copyOfRange(array, headersOffset, headersOffset + headersLength);
    }

    /** A detached copy that owns its bytes. */
    public StoredMessage copy() {
        StoredMessage copy = new StoredMessage();
        copy.id = id;
        copy.physicalId = physicalId;
        copy.relocated = relocated;
        copy.transactional = transactional;
        copy.deliveryCount = deliveryCount;
        copy.producerId = producerId;
        copy.producerSequence = producerSequence;
        copy.timestampMillis = timestampMillis;
        copy.array = Arrays.copyOfRange(array, headersOffset, payloadOffset + payloadLength);
        copy.headersOffset = 0;
        copy.headersLength = headersLength;
        copy.payloadOffset = headersLength;
        copy.payloadLength = payloadLength;
        return copy;
    }

    @Override
    public String toString() {
        return "StoredMessage[id=0x" + Long.toHexString(id) + (relocated ? " relocated from 0x" + Long.toHexString(physicalId) : "")
                + (transactional ? " staged by transaction " + producerId : "")
                + ", deliveries=" + deliveryCount + ", producer=" + producerId + "/" + producerSequence
                + ", headers=" + headersLength + "B, payload=" + payloadLength + "B]";
    }

    /** Points this message at the record {@code codec} holds, read from slot {@code physical}; the queue's lock is held. */
    void fill(io.sluice.storage.segment.RecordCodec codec, long physical, int journaledDeliveryCount) {
        physicalId = physical;
        relocated = codec.relocated();
        transactional = codec.transactional();
        id = relocated ? codec.originalId() : physical;
        deliveryCount = Math.max(journaledDeliveryCount, codec.deliveryCount());
        producerId = codec.producerId();
        producerSequence = codec.producerSequence();
        timestampMillis = codec.timestampMillis();
        array = codec.array();
        headersOffset = codec.headersOffset();
        headersLength = codec.headersLength();
        payloadOffset = codec.payloadOffset();
        payloadLength = codec.payloadLength();
    }
}
