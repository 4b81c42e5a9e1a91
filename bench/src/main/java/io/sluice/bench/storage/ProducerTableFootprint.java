package io.sluice.bench.storage;

import io.sluice.storage.dedup.ProducerCheckpoint;
import io.sluice.storage.dedup.ProducerTable;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The heap one queue's producer table takes with {@code producers} tracked producers (default
 * 10,000, the default cap), each with 100 sequences stored and one producer in ten with a refused
 * sequence (a gap); and the size of its checkpoint and the time to encode and write it. Heap is
 * measured as used heap after repeated full GCs, before and after filling, so run it alone:
 * {@code java -Xmx256m -cp bench/target/sluice-bench.jar io.sluice.bench.storage.ProducerTableFootprint [producers]}.
 */
public final class ProducerTableFootprint {
    private ProducerTableFootprint() {
    }

    public static void main(String[] args) throws Exception {
        int producers = args.length > 0 ? Integer.parseInt(args[0]) : 10_000;
        long before = usedAfterGc();
        ProducerTable table = new ProducerTable(producers, 3_600_000, 10_000);
        for (int p = 1; p <= producers; p++) {
            long id = p * 0x9E37_79B9_7F4A_7C15L;
            for (long s = 1; s <= 100; s++) {
                if (p % 10 == 0 && s == 50) {
                    continue; // refused: a gap
                }
                table.stored(id, 0, s, s);
            }
        }
        long after = usedAfterGc();
        Path dir = Files.createTempDirectory("producer-footprint");
        long encodeStarted = System.nanoTime();
        ByteBuffer image = ProducerCheckpoint.encode(table, 42);
        long encoded = System.nanoTime();
        ProducerCheckpoint.write(dir, image);
        long written = System.nanoTime();
        System.out.printf("producers %d: heap %d bytes (%.1f bytes per producer); checkpoint %d bytes, encoded in %.2f ms, "
                        + "written and forced in %.2f ms%n",
                table.tracked(), after - before, (after - before) / (double) producers, image.remaining(),
                (encoded - encodeStarted) / 1e6, (written - encoded) / 1e6);
        Files.delete(ProducerCheckpoint.file(dir));
        Files.delete(dir);
        if (table.tracked() != producers) {
            throw new AssertionError("table holds " + table.tracked());
        }
    }

    /** The least used heap after each of five full GCs (System.gc() is a stop-the-world full collection under G1's defaults). */
    private static long usedAfterGc() {
        Runtime rt = Runtime.getRuntime();
        long used = Long.MAX_VALUE;
        for (int i = 0; i < 5; i++) {
            System.gc();
            used = Math.min(used, rt.totalMemory() - rt.freeMemory());
        }
        return used;
    }
}
