package io.sluice.storage;

import io.sluice.storage.ack.AckLog;
import io.sluice.storage.durability.Durability;
import io.sluice.storage.segment.MappedFileFaultException;
import io.sluice.storage.segment.RecordCodec;
import io.sluice.storage.segment.SegmentLog;
import io.sluice.storage.segment.SegmentRollCycle;

import java.nio.ByteBuffer;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;

/**
 * Writes one queue's records into its {@link SegmentLog}: checks a message's size against {@code max-message-bytes}
 * (plus the headroom a forwarded copy may take), refuses once the queue's storage failed, reserves the record's disk
 * space with the {@link DiskSpaceGuard}, encodes it and writes it, then tells the ack state its segment grew and
 * {@link Durability} the written index. Relocation writes its copies through {@link #writeLocked} too. Counts the
 * messages appended since the store opened.
 *
 * <p>Threads: the appending caller. {@link #appendLocked}, {@link #writeLocked} and {@link #appendedMessagesLocked}
 * run under the {@link QueueStore}'s lock, which guards the codec and the count; {@link #append} checks a message's size
 * outside it, then takes it.
 * An append does not wake the flusher: whoever waits for the message's durability demands it (rule "force what is
 * awaited" of {@link Durability}).
 */
final class RecordAppender {
    private final String name;
    private final StoreConfig config;
    private final DiskSpaceGuard diskGuard;
    private final LongSupplier clock;
    private final SegmentLog log;
    private final AckLog ackLog;
    private final Durability durability;
    private final ReentrantLock lock;
    private final Runnable ensureOpen;
    private final RecordCodec appendCodec = new RecordCodec();
    private long appendedMessages;

    /** {@code lock}: the store's; {@code ensureOpen}: throws once the store is closed. */
    RecordAppender(String name, StoreConfig config, DiskSpaceGuard diskGuard, LongSupplier clock, SegmentLog log, AckLog ackLog,
                   Durability durability, ReentrantLock lock, Runnable ensureOpen) {
        this.lock = lock;
        this.ensureOpen = ensureOpen;
        this.name = name;
        this.config = config;
        this.diskGuard = diskGuard;
        this.clock = clock;
        this.log = log;
        this.ackLog = ackLog;
        this.durability = durability;
    }

    /** An append's {@code headroom} for a committed entry's message: only {@link StoreConfig#storableMessageBytes} refuses it. */
    static final int COMMITTED = -1;

    /**
     * Checks one message's size, then appends it under the store's lock once the store's open check passes, and returns its id.
     * {@code headroom}: bytes allowed above {@code maxMessageBytes}, or {@link #COMMITTED}: only what a record can hold.
     */
    long append(int flags, long originalId, long producerId, long producerSequence,
                ByteBuffer headers, int headersOffset, int headersLength, ByteBuffer payload, int payloadOffset, int payloadLength,
                int headroom) {
        if (headroom == COMMITTED) {
            checkStorable(headersLength + payloadLength);
        } else {
            checkSize(headersLength + payloadLength, headroom);
        }
        lock.lock();
        try {
            ensureOpen.run();
            return appendLocked(flags, originalId, producerId, producerSequence, headers, headersOffset, headersLength, payload,
                    payloadOffset, payloadLength);
        } finally {
            lock.unlock();
        }
    }

    /** Refuses a message whose headers plus payload ({@code size}) exceed the maximum plus {@code headroom}. */
    private void checkSize(int size, int headroom) {
        if (size > config.maxMessageBytes() + headroom) {
            throw new MessageTooLargeException("message of " + size + " bytes (headers plus payload) for queue '" + name
                    + "' exceeds the limit of " + config.maxMessageBytes() + " bytes (storage.max-message-bytes)"
                    + (headroom > 0 ? " plus the " + headroom + " bytes allowed for headers the broker adds" : ""));
        }
    }

    /** Refuses a message ({@code size}: headers plus payload) that no record of this store can hold ({@link StoreConfig#storableMessageBytes}). */
    private void checkStorable(int size) {
        if (size > config.storableMessageBytes()) {
            throw new MessageTooLargeException("message of " + size + " bytes (headers plus payload) for queue '" + name
                    + "' exceeds the " + config.storableMessageBytes() + " bytes a record of this store can hold (a quarter of "
                    + "Chronicle's block of " + config.chronicleBlockBytes() + " bytes, less the record's header)");
        }
    }

    /**
     * Appends one message (the store is open) and returns its id; see {@link QueueStore#append(long, long, ByteBuffer, ByteBuffer)}.
     * {@code originalId}: -1, or with {@link RecordCodec#FLAG_LOG_POSITION} the replicated log's position it came from.
     */
    private long appendLocked(int flags, long originalId, long producerId, long producerSequence, ByteBuffer headers, int headersOffset,
                      int headersLength, ByteBuffer payload, int payloadOffset, int payloadLength) {
        StorageFailedException refused = refusal();
        if (refused != null) {
            throw refused;
        }
        diskGuard.reserve(headersLength + payloadLength + RecordCodec.HEADER_BYTES + 8L);
        appendCodec.encodeParts(flags, originalId, 0, producerId, producerSequence, clock.getAsLong(),
                headers, headersOffset, headersLength, payload, payloadOffset, payloadLength);
        long index = writeLocked(appendCodec);
        appendedMessages++;
        return index;
    }

    /** What an append throws now, or null: once the queue's storage failed, every append is refused (rule "a failed force is final"). */
    StorageFailedException refusal() {
        StorageFailedException failed = durability.failure();
        return failed == null ? null
                : new StorageFailedException("queue '" + name + "' refuses the append: " + failed.getMessage(), failed);
    }

    /** Writes an encoded record: an append's, or a relocated copy's. A fault of the mapping fails the queue. */
    long writeLocked(RecordCodec codec) {
        long index;
        try {
            index = log.append(codec);
        } catch (MappedFileFaultException e) {
            throw durability.fail("writing a segment", e); // the thread that met the fault lives on; the queue fails safe
        }
        ackLog.segmentGrew(SegmentRollCycle.INSTANCE.toCycle(index), SegmentRollCycle.INSTANCE.toSequenceNumber(index) + 1);
        durability.appended(index, log.lastAppendSegmentMessageBytes(), log.lastAppendSegmentStaged());
        return index;
    }

    long appendedMessagesLocked() {
        return appendedMessages;
    }
}
