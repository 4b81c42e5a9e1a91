package io.sluice.storage.segment;

import io.sluice.storage.memory.ResidentPages;
import net.openhft.chronicle.bytes.Bytes;
import net.openhft.chronicle.bytes.BytesStore;
import net.openhft.chronicle.bytes.MappedBytesStore;

/**
 * Which of a segment log's written pages were last dropped from this process's mappings, and the arithmetic of what
 * to drop next: behind the append position once per sync interval ({@link SegmentLog#dropWrittenPages()}), and what
 * was written since the last force before each force ({@link SegmentLog#pagesWrittenSinceLastForce()}). Rule "the
 * first page stays mapped" (docs/storage.md, "Resident memory"). {@link SegmentLog} hands it the appender's bytes;
 * nothing here touches Chronicle's queue. Owned by one {@link SegmentLog}, used under its owner's lock.
 */
final class WrittenPages {
    private static final long FIRST_PAGE_BYTES = 4096;

    /** The append position at the last drop behind the appender, so that an idle queue's pass costs no syscall. */
    private long droppedAtPosition = -1;
    /** The mapping chunk and the append position at the last {@link #sinceLastForce}. */
    private MappedBytesStore forceDropChunk;
    private long forceDropPosition;

    /**
     * Drops the pages of the appender's mapping chunk behind {@code appendBytes}' position, and those of Chronicle's
     * metadata file ({@code metadata}), each but its first page. Returns true if it dropped pages.
     */
    boolean dropBehindAppender(Bytes<?> appendBytes, BytesStore<?, ?> metadata) {
        if (appendBytes == null || appendBytes.writePosition() == droppedAtPosition) {
            return false;
        }
        long position = appendBytes.writePosition();
        MappedBytesStore chunk = (MappedBytesStore) appendBytes.bytesStore();
        droppedAtPosition = position;
        dropAllButFirstPage(metadata, Long.MAX_VALUE);
        return dropAllButFirstPage(chunk, position);
    }

    /** The whole pages written since the last call, behind {@code appendBytes}' position, reserved; null if none. */
    WrittenRange sinceLastForce(Bytes<?> appendBytes) {
        if (appendBytes == null) {
            return null;
        }
        long position = appendBytes.writePosition();
        MappedBytesStore chunk = (MappedBytesStore) appendBytes.bytesStore();
        long from = Math.max(chunk.start(), FIRST_PAGE_BYTES); // rule "the first page stays mapped"
        if (chunk == forceDropChunk) {
            from = Math.max(from, forceDropPosition);
        }
        forceDropChunk = chunk;
        forceDropPosition = position;
        // Whole pages only: the page the last call stopped in is dropped once the appender has left it.
        from &= -FIRST_PAGE_BYTES;
        long to = Math.min(position, chunk.safeLimit()) & -FIRST_PAGE_BYTES;
        if (to <= from || !chunk.inside(from)) {
            return null;
        }
        WrittenRange range = new WrittenRange(chunk, chunk.addressForRead(from), to - from);
        return chunk.tryReserve(range) ? range : null;
    }

    /** Drops the pages of {@code mapping} below {@code end}, but the file's first page (rule "the first page stays mapped"). */
    private static boolean dropAllButFirstPage(BytesStore<?, ?> mapping, long end) {
        if (!(mapping instanceof MappedBytesStore chunk)) {
            return false;
        }
        long from = Math.max(chunk.start(), FIRST_PAGE_BYTES);
        long to = Math.min(end, chunk.safeLimit());
        if (to <= from || !chunk.inside(from)) {
            return false;
        }
        return ResidentPages.drop(chunk.addressForRead(from), to - from);
    }
}
