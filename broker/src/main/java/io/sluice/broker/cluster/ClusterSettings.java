package io.sluice.broker.cluster;

import io.sluice.broker.config.BrokerConfig;
import io.sluice.storage.files.AtomicFiles;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The settings every node of a cluster must share (rule R2 of docs/replication.md, "Settings that must match across
 * nodes"), recorded once for the cluster in its log and compared with each node's own:
 * <ul>
 *   <li>{@code storage.segment-bytes}: a message's id is its slot ({@code segment << 32 | sequence}) and segments roll by
 *       size, so nodes that roll at other sizes give later messages other ids, and acks by id then name other messages;</li>
 *   <li>{@code queues.dedup-max-producers} and {@code queues.dedup-idle-expiry-ms}: what a producer table forgets decides
 *       how a replayed resend is applied (rule R4a), so tables that forget otherwise may store it on one node alone.</li>
 * </ul>
 * The first leader whose entry level allows it (level {@value #LEVEL}, rule R12) submits a <em>settings entry</em> with its
 * own values, before it serves a new cluster's first client; the first one applied is the cluster's, later ones change
 * nothing. Each node keeps it in {@code <data-dir>/cluster-settings} (written atomically and forced), and a snapshot
 * carries it (a node added later may never see the entry). A node whose own settings differ stops applying the log at
 * the entry, or at the snapshot that carries it ({@link Mismatch}, as for an entry it cannot read), and a node whose data
 * records settings its configuration does not match refuses to start, naming each setting, its value here and the
 * cluster's.
 *
 * <pre>
 * | uint8 version (8) | int32 originNode | int64 originCall | int64 segmentBytes | int32 dedupMaxProducers | int64 dedupIdleExpiryMs |
 * </pre>
 *
 * <p>Threads: {@link #apply} and {@link #installed} on the shard's state machine thread; the reads on any.
 */
final class ClusterSettings {
    static final int VERSION = 8;
    /** The entry level that allows a settings entry. */
    static final int LEVEL = 7;
    static final String FILE = "cluster-settings";
    private static final int BYTES = 1 + Integer.BYTES + Long.BYTES + Long.BYTES + Integer.BYTES + Long.BYTES;

    /** The values of the settings that must match, by key. */
    record Values(long segmentBytes, int dedupMaxProducers, long dedupIdleExpiryMs) {
        static Values of(BrokerConfig config) {
            return new Values(config.storage.segmentBytes, config.queues.dedupMaxProducers, config.queues.dedupIdleExpiryMs);
        }

        Map<String, Long> byKey() {
            Map<String, Long> keys = new TreeMap<>();
            keys.put("queues.dedup-idle-expiry-ms", dedupIdleExpiryMs);
            keys.put("queues.dedup-max-producers", (long) dedupMaxProducers);
            keys.put("storage.segment-bytes", segmentBytes);
            return keys;
        }

        /** Each setting whose value here differs from the cluster's, as "KEY is X on this node and Y in the cluster"; empty if none. */
        List<String> differences(Values cluster) {
            List<String> differ = new ArrayList<>();
            Map<String, Long> theirs = cluster.byKey();
            byKey().forEach((key, value) -> {
                if (!value.equals(theirs.get(key))) {
                    differ.add(key + " is " + value + " on this node and " + theirs.get(key) + " in the cluster");
                }
            });
            return differ;
        }

        String text() {
            StringBuilder text = new StringBuilder();
            byKey().forEach((key, value) -> text.append(key).append('=').append(value).append('\n'));
            return text.toString();
        }

        /** @throws IllegalStateException if {@code text} is not what {@link #text} writes */
        static Values parse(String text, Path from) {
            Map<String, Long> keys = new TreeMap<>();
            try {
                for (String line : text.split("\n")) {
                    if (!line.isBlank()) {
                        int equals = line.indexOf('=');
                        keys.put(line.substring(0, equals).trim(), Long.parseLong(line.substring(equals + 1).trim()));
                    }
                }
                return new Values(keys.get("storage.segment-bytes"), Math.toIntExact(keys.get("queues.dedup-max-producers")),
                        keys.get("queues.dedup-idle-expiry-ms"));
            } catch (RuntimeException e) {
                throw new IllegalStateException(from + " should hold the cluster's settings (KEY=VALUE lines); it holds something else", e);
            }
        }
    }

    /** A settings entry: node {@code originNode}'s call {@code originCall} records {@code values} as the cluster's. */
    record Entry(int originNode, long originCall, Values values) {
    }

    private final Values own;
    /** Null: kept in memory only (tests). */
    private final Path file;
    /** The cluster's, as this node applied them; null while none were. */
    private volatile Values recorded;

    /**
     * @throws Mismatch if {@code file} records settings other than {@code own}: this node's data belongs to a cluster
     *                  whose messages it would give other ids
     */
    ClusterSettings(Values own, Path file) {
        this.own = own;
        this.file = file;
        this.recorded = file == null ? null : read(file);
        if (recorded != null && !own.differences(recorded).isEmpty()) {
            throw Mismatch.atStart(file, own.differences(recorded));
        }
    }

    /** The settings {@code file} holds, or null if there is none. */
    static Values read(Path file) {
        try {
            return Files.exists(file) ? Values.parse(Files.readString(file, StandardCharsets.UTF_8), file) : null;
        } catch (IOException e) {
            throw new UncheckedIOException("reading the cluster's settings from " + file + " failed", e);
        }
    }

    /** The cluster's settings as this node applied them, or null if no settings entry was applied yet. */
    Values recorded() {
        return recorded;
    }

    /** This node's own. */
    Values own() {
        return own;
    }

    /**
     * Applies a committed settings entry at {@code index}: the first one records the cluster's settings, durably before this
     * returns; a later one changes nothing.
     *
     * @throws Mismatch if this node's own settings differ from the cluster's: it must stop, not apply the log with them
     */
    void apply(Values cluster, long index) {
        if (recorded == null) {
            if (file != null) {
                try {
                    AtomicFiles.write(file, channel -> AtomicFiles.writeFully(channel,
                            ByteBuffer.wrap(cluster.text().getBytes(StandardCharsets.UTF_8))));
                } catch (IOException e) {
                    throw new UncheckedIOException("writing the cluster's settings to " + file + " failed", e);
                }
            }
            recorded = cluster;
        }
        List<String> differ = own.differences(recorded);
        if (!differ.isEmpty()) {
            throw Mismatch.at("log entry " + index + " records", differ);
        }
    }

    /**
     * Before a snapshot through {@code index} that carries the cluster's settings {@code cluster} (null: none recorded then)
     * is swapped in: whether this node's own settings are the cluster's as they would stand once it is (the first recorded
     * are the cluster's). Changes nothing.
     *
     * @throws Mismatch if they differ: the node must refuse the snapshot with its own store untouched
     */
    void checkSnapshot(Values cluster, long index) {
        Values standing = recorded != null ? recorded : cluster;
        if (standing != null && !own.differences(standing).isEmpty()) {
            throw Mismatch.at("the snapshot through log entry " + index + " records", own.differences(standing));
        }
    }

    /**
     * A snapshot through {@code index} carrying the cluster's settings (null: none recorded then) is swapped in, after
     * {@link #checkSnapshot}: as {@link #apply}.
     */
    void installed(Values cluster, long index) {
        if (cluster != null) {
            checkSnapshot(cluster, index);
            apply(cluster, index);
        }
    }

    static boolean is(byte[] data) {
        return data.length > 0 && (data[0] & 0xff) == VERSION;
    }

    static byte[] encode(int originNode, long originCall, Values values) {
        return ByteBuffer.allocate(BYTES).put((byte) VERSION).putInt(originNode).putLong(originCall).putLong(values.segmentBytes())
                .putInt(values.dedupMaxProducers()).putLong(values.dedupIdleExpiryMs()).array();
    }

    /** @throws IllegalArgumentException a damaged entry (every node skips it alike) */
    static Entry decode(byte[] data) {
        if (data.length != BYTES || !is(data)) {
            throw new IllegalArgumentException("a settings entry of " + data.length + " bytes is damaged (" + BYTES + " bytes)");
        }
        ByteBuffer in = ByteBuffer.wrap(data, 1, BYTES - 1);
        return new Entry(in.getInt(), in.getLong(), new Values(in.getLong(), in.getInt(), in.getLong()));
    }

    /** This node's settings differ from the cluster's: it stops applying the log there, or refuses to start. */
    static final class Mismatch extends RuntimeException {
        private Mismatch(String message) {
            super(message);
        }

        static Mismatch at(String where, List<String> differ) {
            return new Mismatch(where + " the settings every node of the cluster must share, and this node's differ: "
                    + String.join("; ", differ) + ". This node stops applying the log rather than give messages other ids, or "
                    + "replay resends otherwise, than the other nodes: set them as the cluster's and start it again");
        }

        static Mismatch atStart(Path file, List<String> differ) {
            return new Mismatch("this node's data (" + file + ") records the settings every node of its cluster must share, and "
                    + "this node's configuration differs: " + String.join("; ", differ) + ". Set them as the cluster's and start "
                    + "it again");
        }
    }
}
