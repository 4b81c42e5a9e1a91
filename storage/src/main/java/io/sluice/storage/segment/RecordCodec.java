package io.sluice.storage.segment;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

/**
 * The layout of one message record inside a Chronicle document (little-endian). Chronicle's own
 * 4-byte document header, which marks a record complete only once it is fully written, comes before
 * this and is not shown.
 *
 * <pre>
 *  0               4       5       6               8
 *  +---------------+-------+-------+---------------+
 *  |    crc32c     |version| flags | headersLength |   crc32c covers bytes 4 .. end of record
 *  +---------------+-------+-------+---------------+
 *  |             originalId (8)                    |   relocated: the id the message was first stored
 *  +-----------------------------------------------+   under; otherwise -1
 *  | deliveryCount |  producerId (8) ...           |   deliveryCount: as carried by a relocation
 *  +---------------+-------------------------------+
 *  |  ... producerId | producerSequence (8) ...    |
 *  +-----------------------------------------------+
 *  | ... | timestampMillis (8)          | payload- |
 *  +-----------------------------------------------+
 *  | Length (4) | headers (headersLength) | payload |
 *  +-----------------------------------------------+
 * </pre>
 *
 * Flags: bit 0 {@link #FLAG_RELOCATED} (a copy written by relocation), bit 1 {@link #FLAG_FORWARDED}
 * (a copy the broker forwarded from another queue, such as a dead letter: its producer identity is
 * the original publisher's, not a producer of this queue), bit 2 {@link #FLAG_TRANSACTIONAL} (a
 * message a transaction staged: its producer id is the transaction's number, and it is not to be
 * delivered unless that transaction committed; the broker decides, docs/transactions.md). A staged
 * record's producerSequence says what the transaction wrote: {@link #STAGED_MESSAGE} (0) a message,
 * {@link #STAGED_COMMIT_RECORD} (1) the transaction's commit record, written after its messages in
 * their one target queue and never delivered. Bit 3 {@link #FLAG_LOG_POSITION}: a message a cluster node stored from
 * a replicated PUBLISH entry, whose originalId field holds that entry's position in the replicated log instead (rule R4a
 * of docs/replication.md: a restart tells by it which entries a queue holds already); a relocated copy drops it.
 *
 * Field offsets: crc 0, version 4, flags 5, headersLength 6, originalId 8, deliveryCount 16,
 * producerId 20, producerSequence 28, timestampMillis 36, payloadLength 44, headers 48.
 *
 * <p>Not thread-safe: one instance per writer or reader, which reuses its buffer.
 */
public final class RecordCodec {
    private static final ByteBuffer NO_BYTES = ByteBuffer.allocate(0);
    public static final int VERSION = 1;
    public static final int HEADER_BYTES = 48;
    public static final int FLAG_RELOCATED = 1;
    public static final int FLAG_FORWARDED = 2;
    public static final int FLAG_TRANSACTIONAL = 4;
    public static final int FLAG_LOG_POSITION = 8;
    /** The producerSequence of a staged record that is a message. */
    public static final long STAGED_MESSAGE = 0;
    /** The producerSequence of a staged record that is its transaction's commit record. */
    public static final long STAGED_COMMIT_RECORD = 1;
    /** Offsets inside a record, for a pass that reads a field without decoding the record. */
    public static final int OFFSET_FLAGS_BYTE = 5;
    public static final int OFFSET_ORIGINAL_ID_FIELD = 8;
    public static final int OFFSET_PRODUCER_ID_FIELD = 20;
    public static final int OFFSET_PRODUCER_SEQUENCE_FIELD = 28;
    public static final int MAX_HEADERS_BYTES = 0xFFFF;

    private static final int OFFSET_VERSION = 4;
    private static final int OFFSET_FLAGS = 5;
    private static final int OFFSET_HEADERS_LENGTH = 6;
    private static final int OFFSET_ORIGINAL_ID = 8;
    private static final int OFFSET_DELIVERY_COUNT = 16;
    private static final int OFFSET_PRODUCER_ID = 20;
    private static final int OFFSET_PRODUCER_SEQUENCE = 28;
    private static final int OFFSET_TIMESTAMP = 36;
    private static final int OFFSET_PAYLOAD_LENGTH = 44;

    private final CRC32C crc = new CRC32C();
    private byte[] array = new byte[1024];
    private ByteBuffer buffer = ByteBuffer.wrap(array).order(ByteOrder.LITTLE_ENDIAN);
    private int length;

    /** The encoded or decoded record: valid until the next call on this codec. */
    public byte[] array() {
        return array;
    }

    public int length() {
        return length;
    }

    /** Encodes a record into this codec's buffer; the caller writes {@code array()[0, length())}. */
    public void encode(int flags, long originalId, int deliveryCount, long producerId, long producerSequence,
                       long timestampMillis, ByteBuffer headers, ByteBuffer payload) {
        ByteBuffer h = headers == null ? NO_BYTES : headers;
        ByteBuffer p = payload == null ? NO_BYTES : payload;
        encodeParts(flags, originalId, deliveryCount, producerId, producerSequence, timestampMillis,
                h, h.position(), h.remaining(), p, p.position(), p.remaining());
    }

    /**
     * Encodes a record whose headers and payload are the given regions of {@code headersSource} and
     * {@code payloadSource} (absolute offsets; the buffers' positions are neither used nor moved), so a
     * caller holding a whole frame in one buffer encodes each message without creating a slice.
     */
    public void encodeParts(int flags, long originalId, int deliveryCount, long producerId, long producerSequence,
                            long timestampMillis, ByteBuffer headersSource, int headersOffset, int headersLength,
                            ByteBuffer payloadSource, int payloadOffset, int payloadLength) {
        if (headersLength > MAX_HEADERS_BYTES) {
            throw new IllegalArgumentException("headers of " + headersLength + " bytes exceed the maximum of " + MAX_HEADERS_BYTES);
        }
        int total = HEADER_BYTES + headersLength + payloadLength;
        ensureCapacity(total);
        ByteBuffer b = buffer;
        b.put(OFFSET_VERSION, (byte) VERSION);
        b.put(OFFSET_FLAGS, (byte) flags);
        b.putShort(OFFSET_HEADERS_LENGTH, (short) headersLength);
        b.putLong(OFFSET_ORIGINAL_ID, originalId);
        b.putInt(OFFSET_DELIVERY_COUNT, deliveryCount);
        b.putLong(OFFSET_PRODUCER_ID, producerId);
        b.putLong(OFFSET_PRODUCER_SEQUENCE, producerSequence);
        b.putLong(OFFSET_TIMESTAMP, timestampMillis);
        b.putInt(OFFSET_PAYLOAD_LENGTH, payloadLength);
        if (headersLength > 0) {
            headersSource.get(headersOffset, array, HEADER_BYTES, headersLength);
        }
        if (payloadLength > 0) {
            payloadSource.get(payloadOffset, array, HEADER_BYTES + headersLength, payloadLength);
        }
        crc.reset();
        crc.update(array, 4, total - 4);
        b.putInt(0, (int) crc.getValue());
        length = total;
    }

    /** Makes room for a record of {@code size} bytes to be read into {@link #array()}, then {@link #loaded(int)}. */
    public byte[] arrayFor(int size) {
        ensureCapacity(size);
        return array;
    }

    /** Declares that {@code size} bytes were read into the array; returns null if valid, else what is wrong. */
    public String loaded(int size) {
        length = size;
        if (size < HEADER_BYTES) {
            return "record of " + size + " bytes is shorter than the " + HEADER_BYTES + "-byte header";
        }
        int version = array[OFFSET_VERSION] & 0xFF;
        if (version != VERSION) {
            return "record format version " + version + " is not the supported version " + VERSION;
        }
        int expectedLength = HEADER_BYTES + headersLength() + payloadLength();
        if (payloadLength() < 0 || expectedLength != size) {
            return "record length " + size + " does not match its header (headers " + headersLength()
                    + " + payload " + payloadLength() + " + " + HEADER_BYTES + ")";
        }
        crc.reset();
        crc.update(array, 4, size - 4);
        int actual = (int) crc.getValue();
        int stored = buffer.getInt(0);
        if (actual != stored) {
            return "checksum 0x" + Integer.toHexString(actual) + " does not match stored 0x" + Integer.toHexString(stored);
        }
        return null;
    }

    public int flags() {
        return array[OFFSET_FLAGS] & 0xFF;
    }

    public boolean relocated() {
        return (flags() & FLAG_RELOCATED) != 0;
    }

    public boolean forwarded() {
        return (flags() & FLAG_FORWARDED) != 0;
    }

    public boolean transactional() {
        return (flags() & FLAG_TRANSACTIONAL) != 0;
    }

    /** The replicated log's position of the entry this record was stored from ({@link #FLAG_LOG_POSITION}), or -1. */
    public long logPosition() {
        return (flags() & (FLAG_LOG_POSITION | FLAG_RELOCATED)) == FLAG_LOG_POSITION ? buffer.getLong(OFFSET_ORIGINAL_ID) : -1;
    }

    public long originalId() {
        return buffer.getLong(OFFSET_ORIGINAL_ID);
    }

    public int deliveryCount() {
        return buffer.getInt(OFFSET_DELIVERY_COUNT);
    }

    public long producerId() {
        return buffer.getLong(OFFSET_PRODUCER_ID);
    }

    public long producerSequence() {
        return buffer.getLong(OFFSET_PRODUCER_SEQUENCE);
    }

    public long timestampMillis() {
        return buffer.getLong(OFFSET_TIMESTAMP);
    }

    public int headersLength() {
        return buffer.getShort(OFFSET_HEADERS_LENGTH) & 0xFFFF;
    }

    public int payloadLength() {
        return buffer.getInt(OFFSET_PAYLOAD_LENGTH);
    }

    public int headersOffset() {
        return HEADER_BYTES;
    }

    public int payloadOffset() {
        return HEADER_BYTES + headersLength();
    }

    private void ensureCapacity(int size) {
        if (array.length < size) {
            array = new byte[Math.max(size, array.length * 2)];
            buffer = ByteBuffer.wrap(array).order(ByteOrder.LITTLE_ENDIAN);
        }
    }
}
