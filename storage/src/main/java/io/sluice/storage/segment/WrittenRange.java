package io.sluice.storage.segment;

import io.sluice.storage.memory.ResidentPages;
import net.openhft.chronicle.bytes.MappedBytesStore;
import net.openhft.chronicle.core.io.ReferenceOwner;

/**
 * Whole written pages of a mapping chunk, reserved so that the chunk stays mapped until they are dropped: the range
 * is the reservation's owner (a Chronicle reference), so ranges of one chunk never share one. Made under the queue's
 * lock by {@link SegmentLog#pagesWrittenSinceLastForce()}, dropped on any thread without it.
 */
public final class WrittenRange implements ReferenceOwner {
    private final MappedBytesStore chunk;
    private final long address;
    private final long length;

    WrittenRange(MappedBytesStore chunk, long address, long length) {
        this.chunk = chunk;
        this.address = address;
        this.length = length;
    }

    /** Drops the pages from this process's mappings and releases the chunk; once, on any thread, no lock needed. */
    public boolean dropAndRelease() {
        try {
            return ResidentPages.drop(address, length);
        } finally {
            chunk.release(this); // the last reference if the appender left the chunk meanwhile: Chronicle's releaser unmaps it
        }
    }
}
