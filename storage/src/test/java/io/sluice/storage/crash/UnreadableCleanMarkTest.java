package io.sluice.storage.crash;

import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Review of cac9c76: the {@code clean-shutdown} mark is now read (Files.readString, strict UTF-8) where before only its
 * presence counted. A mark whose bytes are not UTF-8 (a machine crash can leave a file's new blocks holding stale data;
 * the mark is never forced) makes the open throw "cannot open data directory" instead of not believing the mark and
 * forcing every segment, the safe side the class comment promises for a mark it cannot match.
 */
class UnreadableCleanMarkTest {
    @TempDir
    Path temp;

    @Test
    void aCleanShutdownMarkThatIsNotUtf8IsNotBelievedRatherThanRefusingTheStore() throws Exception {
        StoreConfig config = StoreConfig.builder().reservedDiskBytes(64L << 20).build();
        Path data = temp.resolve("data");
        try (MessageStore store = MessageStore.open(data, config)) {
            QueueStore q = store.createQueue("q");
            q.whenDurable(q.append(new byte[0], "m".getBytes(StandardCharsets.UTF_8))).get();
        }
        Files.write(data.resolve("clean-shutdown"), new byte[] {(byte) 0xC3, (byte) 0x28, (byte) 0xFF, (byte) 0xFE});

        try (MessageStore store = MessageStore.open(data, config)) {
            assertEquals(1, store.queue("q").unackedMessages());
        }
    }
}
