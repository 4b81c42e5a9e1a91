package io.sluice.storage.tool;

import io.sluice.storage.ack.AckStateReader;
import io.sluice.storage.segment.RecordCodec;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * {@code dump}: prints one queue's records in store order (acknowledged ones too, marked) and its
 * ack state summary. Not thread-safe; one use per run.
 *
 * <p>One line per record:
 * <pre>
 * 0x0000000000000003 0/3 acked   delivered 0 producer 7/3 headers 0 B payload 256 B "order-3 ..."
 * </pre>
 * The preview shows the first {@value #PREVIEW_BYTES} payload bytes as text when they are printable
 * ASCII, else as hex.
 */
final class QueueDumper {
    static final int PREVIEW_BYTES = 32;

    /** Lines between two checks that the report can still be written (rule T1 of {@link StorageTool}). */
    private static final int LINES_PER_OUTPUT_CHECK = 1024;

    private final PrintStream out;
    private final Progress progress;

    QueueDumper(PrintStream out, Progress progress) {
        this.out = out;
        this.progress = progress;
    }

    /** Returns false if the ack state or a record is damaged. */
    boolean dump(String name, Path queueDirectory, long fromId, long limit) throws IOException {
        boolean[] clean = {true};
        try (SegmentScan scan = SegmentScan.open(queueDirectory)) {
            Map<Integer, Long> counts = scan.indexedCounts();
            AckSnapshot acks = AckSnapshot.load(queueDirectory, counts, scan.files().listed().keySet(), scan.damagedSegments());
            AckStateReader state = acks.state();
            out.printf("Queue '%s' (%s)%n", name, queueDirectory);
            if (state == null) {
                clean[0] = false;
                out.println("Ack state: DAMAGED: " + acks.damage());
            } else {
                out.printf("Ack state: %d unacked in %d live segment(s), first unacked %s, checkpoint generation %d,"
                                + " %d journal record(s)%n",
                        state.unackedCount(), state.liveSegments().length, idOrNone(state.firstUnackedId()),
                        acks.checkpointGeneration(), acks.journalRecords());
            }
            List<String> damage = new ArrayList<>();
            scan.report(state, damage, new ArrayList<>());
            for (String sentence : damage) {
                clean[0] = false;
                out.println("DAMAGE " + sentence); // the records of a file named here are missing from the lines below
            }
            StorageTool.checkOutput(out);
            long[] printed = {0};
            String phase = "dump of queue '" + name + "'";
            scan.scan(fromId, (index, segment, sequence, codec, problem) -> {
                if (printed[0] >= limit) {
                    return false;
                }
                if (printed[0] % LINES_PER_OUTPUT_CHECK == 0) {
                    StorageTool.checkOutput(out);
                }
                progress.show(phase, printed[0]);
                printed[0]++;
                if (problem != null) {
                    clean[0] = false;
                    out.printf("0x%016x %d/%d CORRUPT %s%n", index, segment, sequence, problem);
                    return true;
                }
                out.println(line(index, segment, sequence, codec, state));
                return true;
            }, sentence -> {
                clean[0] = false;
                out.println("DAMAGE " + sentence);
            });
            out.printf("%d record(s) printed%n", printed[0]);
        }
        return clean[0];
    }

    private static String line(long index, int segment, long sequence, RecordCodec codec, AckStateReader state) {
        StringBuilder b = new StringBuilder(160);
        b.append(String.format("0x%016x %d/%d ", index, segment, sequence));
        long original = codec.relocated() ? codec.originalId() : index;
        if (state == null) {
            b.append("?      ");
        } else if (!codec.relocated() && state.physicalId(index) != index) {
            b.append(String.format("moved to 0x%x ", state.physicalId(index)));
        } else {
            b.append(state.isAcked(index) ? "acked  " : "unacked");
        }
        int delivered = state == null ? codec.deliveryCount() : Math.max(codec.deliveryCount(), state.deliveryCount(original));
        b.append(" delivered ").append(delivered);
        if (codec.relocated()) {
            b.append(String.format(" relocated from 0x%x", original));
        }
        if (codec.transactional() && codec.producerSequence() == RecordCodec.STAGED_COMMIT_RECORD) {
            b.append(" a transaction's commit record"); // never delivered; its transaction's messages staged here are committed
        } else if (codec.transactional()) { // its producer id is the transaction's number; the broker delivers it only if that committed
            b.append(" staged by a transaction");
        }
        b.append(" producer ").append(codec.producerId()).append('/').append(codec.producerSequence());
        b.append(" headers ").append(codec.headersLength()).append(" B");
        b.append(" payload ").append(codec.payloadLength()).append(" B ");
        b.append(preview(codec.array(), codec.payloadOffset(), codec.payloadLength()));
        return b.toString();
    }

    static String preview(byte[] array, int offset, int length) {
        int n = Math.min(length, PREVIEW_BYTES);
        boolean printable = true;
        for (int i = 0; i < n; i++) {
            int c = array[offset + i] & 0xFF;
            if (c < 0x20 || c > 0x7E) {
                printable = false;
                break;
            }
        }
        String more = length > n ? " ..." : "";
        if (printable) {
            return "\"" + new String(array, offset, n, StandardCharsets.US_ASCII) + "\"" + more;
        }
        StringBuilder hex = new StringBuilder(n * 2 + 6);
        hex.append("hex ");
        for (int i = 0; i < n; i++) {
            hex.append(String.format("%02x", array[offset + i] & 0xFF));
        }
        return hex.append(more).toString();
    }

    private static String idOrNone(long id) {
        return id < 0 ? "none" : String.format("0x%x", id);
    }
}
