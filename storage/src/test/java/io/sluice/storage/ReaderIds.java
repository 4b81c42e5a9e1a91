package io.sluice.storage;

import java.util.ArrayList;
import java.util.List;

/** What a reader of a queue gets, as ids: the tests that check which messages a recovery kept compare these. */
public final class ReaderIds {
    private ReaderIds() {
    }

    /** The ids of every message a new reader of {@code queue} reads, in order. */
    public static List<Long> readAll(QueueStore queue) {
        List<Long> read = new ArrayList<>();
        try (QueueReader reader = queue.openReader()) {
            for (StoredMessage m = reader.next(); m != null; m = reader.next()) {
                read.add(m.id());
            }
        }
        return read;
    }
}
