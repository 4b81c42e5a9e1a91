package io.sluice.broker.cluster;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rule R2: the settings every node must share are recorded once for the cluster, by its log's first settings entry, and
 * each node compares its own with them: when it applies the entry, when a snapshot brings them, and when it starts.
 */
class ClusterSettingsTest {
    private static final ClusterSettings.Values CLUSTER = new ClusterSettings.Values(1L << 20, 1000, 3_600_000);

    @TempDir
    Path dir;

    @Test
    void theFirstEntryRecordsTheClustersSettingsDurablyAndLaterOnesChangeNothing() {
        Path file = dir.resolve(ClusterSettings.FILE);
        ClusterSettings node = new ClusterSettings(CLUSTER, file);
        assertNull(node.recorded());
        node.apply(CLUSTER, 3);
        assertEquals(CLUSTER, node.recorded());
        assertEquals(CLUSTER, ClusterSettings.read(file));
        node.apply(new ClusterSettings.Values(2L << 20, 1000, 3_600_000), 9); // another leader's, later in the log
        assertEquals(CLUSTER, node.recorded(), "the first one applied is the cluster's");
        assertEquals(CLUSTER, new ClusterSettings(CLUSTER, file).recorded(), "kept across a restart");
    }

    @Test
    void aNodeWhoseOwnSettingsDifferStopsAtTheEntryNamingEachAndRefusesToStartSoConfigured() {
        Path file = dir.resolve(ClusterSettings.FILE);
        ClusterSettings.Values mine = new ClusterSettings.Values(2L << 20, 1000, 60_000);
        ClusterSettings node = new ClusterSettings(mine, file);
        ClusterSettings.Mismatch stop = assertThrows(ClusterSettings.Mismatch.class, () -> node.apply(CLUSTER, 3));
        assertTrue(stop.getMessage().contains("log entry 3")
                && stop.getMessage().contains("storage.segment-bytes is 2097152 on this node and 1048576 in the cluster")
                && stop.getMessage().contains("queues.dedup-idle-expiry-ms is 60000 on this node and 3600000 in the cluster")
                && !stop.getMessage().contains("dedup-max-producers"), stop.getMessage());
        assertEquals(CLUSTER, ClusterSettings.read(file), "the cluster's are recorded, this node's are not");

        ClusterSettings.Mismatch refused = assertThrows(ClusterSettings.Mismatch.class, () -> new ClusterSettings(mine, file));
        assertTrue(refused.getMessage().contains(file.toString())
                && refused.getMessage().contains("storage.segment-bytes is 2097152 on this node and 1048576 in the cluster"),
                refused.getMessage());
        assertEquals(CLUSTER, new ClusterSettings(CLUSTER, file).recorded(), "set as the cluster's, it starts");
    }

    @Test
    void aSnapshotCarryingTheSettingsIsCheckedAsTheEntryIs() {
        ClusterSettings joining = new ClusterSettings(new ClusterSettings.Values(1L << 20, 50, 3_600_000), null);
        joining.installed(null, 40); // a snapshot of a cluster that recorded none yet
        assertNull(joining.recorded());
        ClusterSettings.Mismatch stop = assertThrows(ClusterSettings.Mismatch.class, () -> joining.installed(CLUSTER, 41));
        assertTrue(stop.getMessage().contains("the snapshot through log entry 41")
                && stop.getMessage().contains("queues.dedup-max-producers is 50 on this node and 1000 in the cluster"), stop.getMessage());
    }

    @Test
    void theEntryRoundTripsGoesAloneAndNeedsLevelSeven() {
        byte[] entry = ClusterSettings.encode(2, 77, CLUSTER);
        assertEquals(new ClusterSettings.Entry(2, 77, CLUSTER), ClusterSettings.decode(entry));
        assertThrows(IllegalArgumentException.class, () -> ClusterSettings.decode(java.util.Arrays.copyOf(entry, entry.length - 1)));
        assertFalse(EntryBatch.batchable(entry));
        assertEquals(ClusterSettings.LEVEL, EntryLevels.required(ClusterSettings.VERSION));
        assertThrows(EntryLevels.EntryTooNew.class, () -> EntryLevels.check(entry, 5, ClusterSettings.LEVEL - 1));
        assertEquals(List.of(), CLUSTER.differences(CLUSTER));
    }
}
