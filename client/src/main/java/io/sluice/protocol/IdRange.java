package io.sluice.protocol;

/**
 * An inclusive range {@code from..to} of producer sequences or message ids, as CONFIRM, PUBLISH_ERROR, ACK
 * and NACK carry them. A single id is the range {@code id..id}.
 *
 * <pre>
 * int64 from | int64 to        (from &lt;= to)
 * </pre>
 */
public record IdRange(long from, long to) {
    static final int ENCODED_BYTES = 2 * Long.BYTES;

    public IdRange {
        if (from > to) {
            throw new IllegalArgumentException("range start " + from + " is after range end " + to);
        }
    }

    public static IdRange single(long id) {
        return new IdRange(id, id);
    }

    public boolean contains(long id) {
        return id >= from && id <= to;
    }

    static IdRange read(BodyReader reader) {
        long from = reader.readLong("range from");
        long to = reader.readLong("range to");
        if (from > to) {
            throw reader.malformed("range from " + from + " is after range to " + to);
        }
        return new IdRange(from, to);
    }
}
