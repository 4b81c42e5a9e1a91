package io.sluice.storage;

import java.nio.file.Path;

/**
 * A stored record failed its checksum or its layout checks. The message names the segment file, the
 * record's index and its offset in the file. Readers skip past the record, so everything else stays
 * readable; the record is never delivered.
 */
public class CorruptRecordException extends StorageException {
    private static final long serialVersionUID = 1L;

    private final long index;

    public CorruptRecordException(Path file, long index, long fileOffset, String what) {
        super("corrupt record in segment " + file + " at index 0x" + Long.toHexString(index)
                + " (file offset " + fileOffset + "): " + what);
        this.index = index;
    }

    /** The store index of the damaged record. */
    public long index() {
        return index;
    }
}
