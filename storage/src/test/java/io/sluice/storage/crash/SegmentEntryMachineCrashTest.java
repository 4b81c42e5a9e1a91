package io.sluice.storage.crash;

import io.sluice.storage.DurabilityMode;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueReader;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.StoredMessage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A new queue's first segment after a machine crash, on a disk image built from exactly what was
 * forced, directory entries included ({@link ForcedDiskImage}): a confirm means the segment's data and
 * its name in the directory are both on disk. The store used to force the segment directory only after
 * a roll, so a queue whose messages were all in its first segment lost every one of them.
 */
class SegmentEntryMachineCrashTest {
    @TempDir
    Path temp;

    @Test
    void theConfirmedMessagesOfANewQueuesFirstSegmentSurviveAMachineCrash() throws Exception {
        Path data = temp.resolve("data");
        ForcedDiskImage disk = new ForcedDiskImage(data);
        StoreConfig config = StoreConfig.builder().durability(DurabilityMode.ALWAYS).reservedDiskBytes(64L << 20).build();
        List<String> confirmed = new ArrayList<>();
        try (MessageStore store = MessageStore.open(data, config, disk)) {
            QueueStore q = store.createQueue("fresh");
            for (int i = 0; i < 10; i++) {
                String text = "m" + i;
                q.whenDurable(q.append(null, text.getBytes(StandardCharsets.UTF_8))).get(10, TimeUnit.SECONDS);
                confirmed.add(text);
            }
            Path image = temp.resolve("image");
            disk.build(image); // the power fails here: the live store is never closed into the image
            try (MessageStore recovered = MessageStore.open(image, config)) {
                List<String> read = new ArrayList<>();
                try (QueueReader reader = recovered.queue("fresh").openReader()) {
                    for (StoredMessage m = reader.next(); m != null; m = reader.next()) {
                        read.add(new String(m.payloadBytes(), StandardCharsets.UTF_8));
                    }
                }
                assertEquals(confirmed, read, "every confirmed message of the first segment");
            }
        }
    }
}
