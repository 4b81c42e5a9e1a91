package io.sluice.broker;

import io.sluice.protocol.OkFrame;
import io.sluice.protocol.SubscribeFrame;
import io.sluice.storage.QueueIncarnation;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static io.sluice.broker.TransactionFrames.commitOrdersForAnInvoice;
import static io.sluice.broker.TransactionFrames.count;
import static io.sluice.broker.TransactionFrames.payloads;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rule "an incarnation is checked" (docs/storage.md): a committed transaction's published message waits in its queue,
 * made visible at each start by the commit record that names the queue's incarnation (X6 of docs/transactions.md). A
 * digit of that incarnation flipped on disk used to read as another id, so the restart took the queue for one declared
 * again under the name and discarded the committed, confirmed message. The start is refused instead, naming the file;
 * restored, the message is there.
 */
class TransactionQueueIncarnationDamagedTest {
    @TempDir
    Path dir;

    @Test
    void aCommittedMessageIsNotDiscardedForAFlippedDigitOfItsQueuesIncarnation() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of()); RawClient c = RawClient.connected(broker.port())) {
            commitOrdersForAnInvoice(c);
            assertEquals(1, count(c, "invoices"));
            assertEquals(1, broker.transactions().logRecords(), "the commit record stays while i1 is in its queue");
        }
        Path file;
        try (Stream<Path> files = Files.walk(dir)) {
            file = files.filter(p -> p.endsWith(Path.of("queues", "invoices", QueueIncarnation.FILE))).findFirst().orElseThrow();
        }
        byte[] good = Files.readAllBytes(file);
        byte[] flipped = good.clone();
        flipped[new String(good, StandardCharsets.UTF_8).indexOf(" created") - 1] ^= 0x01; // the id's last digit, another digit
        Files.write(file, flipped);

        RuntimeException refused = assertThrows(RuntimeException.class, () -> TestBrokers.start(dir, Map.of()).close());
        assertTrue(messages(refused).contains("incarnation file " + file.toAbsolutePath() + " is damaged"), messages(refused));
        assertArrayEquals(flipped, Files.readAllBytes(file), "left as it is, for the operator");

        Files.write(file, good); // restored from a backup
        try (Broker broker = TestBrokers.start(dir, Map.of()); RawClient c = RawClient.connected(broker.port())) {
            assertEquals(1, count(c, "invoices"), "the committed message is still there");
            assertEquals(0, count(c, "orders"), "the commit's acknowledgements hold");
            c.send(new SubscribeFrame(2, 8, "invoices", 10));
            c.expect(OkFrame.class);
            assertEquals(List.of("i1"), payloads(c.deliveries(1)));
        }
    }

    private static String messages(Throwable e) {
        StringBuilder all = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            all.append(t).append('\n');
        }
        return all.toString();
    }
}
