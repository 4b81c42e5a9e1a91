package io.sluice.storage.ack;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sluice.storage.Directories;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.IntBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;

/**
 * A machine crash against a journal that is reused across rotations. Nothing forces the journal
 * here, so after a power cut each 4 KiB page of it may hold any version the page ever had: this
 * generation's, at any point of its appends, or an earlier generation's. Whatever the mix, recovery
 * must come back with the state of the checkpoint plus a prefix of the operations after it, never
 * with a record of another generation applied and never with a gap. Delivery counts make an old
 * record visible: replayed after the checkpoint, an earlier generation's DELIVERED record would lower
 * a count (acks alone would not show it, since an old ack is already in the checkpoint).
 *
 * <p>A journal reused without the generation in its CRCs and without end markers fails here (old
 * records at offset 32 replay). With end markers alone it would usually pass: an old record is then
 * reached only where a new record ends exactly on a page boundary and an old one starts there, which
 * random mixes seldom produce; {@link AckJournalTest} builds that case on purpose.
 */
class AckJournalMachineCrashTest {
    private static final int PAGE = 4096;
    private static final int JOURNAL = 4 * PAGE;
    private static final int MESSAGES = 5000;

    @Property(tries = 15)
    void recoversTheCheckpointPlusAPrefixWhateverMixOfPageVersionsReachedTheDisk(@ForAll long seed) throws IOException {
        Random random = new Random(seed);
        Path dir = Files.createTempDirectory("acks-crash");
        AckLog log = AckLog.open(dir, JOURNAL);
        log.segmentGrew(0, MESSAGES);
        log.recover();
        Path journal = dir.resolve(AckFiles.JOURNAL);

        List<List<byte[]>> versionsOfPage = new ArrayList<>();
        for (int page = 0; page < JOURNAL / PAGE; page++) {
            versionsOfPage.add(new ArrayList<>());
        }
        notePageVersions(journal, versionsOfPage);
        // The model: -1 for an acknowledged message, else how often it was delivered.
        int[] state = new int[MESSAGES];
        List<IntBuffer> statesOfThisGeneration = new ArrayList<>(List.of(IntBuffer.wrap(state.clone())));
        long generation = log.generation();
        int operations = 2500 + random.nextInt(1500);
        for (int op = 0; op < operations; op++) {
            int dice = random.nextInt(10);
            if (dice < 5) {
                int id = random.nextInt(MESSAGES);
                if (state[id] >= 0) {
                    log.recordDelivery(id, state[id] + 1);
                    state[id]++;
                }
            } else if (dice < 6) {
                int from = random.nextInt(MESSAGES);
                int to = Math.min(MESSAGES - 1, from + random.nextInt(20));
                log.ackRange(from, to);
                Arrays.fill(state, from, to + 1, -1);
            } else {
                int id = random.nextInt(MESSAGES);
                log.ack(id);
                state[id] = -1;
            }
            if (log.generation() != generation) {
                // The checkpoint of the rotation holds the operation that triggered it.
                generation = log.generation();
                statesOfThisGeneration.clear();
            }
            statesOfThisGeneration.add(IntBuffer.wrap(state.clone()));
            notePageVersions(journal, versionsOfPage);
        }
        assertTrue(generation >= 3, "the journal rotated, generation " + generation);

        // The process is gone (not closed); the checkpoint of this generation is on disk (it was fsynced).
        Path copy = Files.createTempDirectory("acks-crash-copy");
        Files.copy(dir.resolve(AckFiles.CHECKPOINT), copy.resolve(AckFiles.CHECKPOINT));
        for (int trial = 0; trial < 40; trial++) {
            ByteBuffer disk = ByteBuffer.allocate(JOURNAL);
            for (List<byte[]> versions : versionsOfPage) {
                disk.put(versions.get(random.nextInt(versions.size())));
            }
            Files.write(copy.resolve(AckFiles.JOURNAL), disk.array());
            int[] recovered = new int[MESSAGES];
            try (AckLog reopened = AckLog.open(copy, JOURNAL)) {
                reopened.segmentGrew(0, MESSAGES);
                reopened.recover();
                for (int id = 0; id < MESSAGES; id++) {
                    recovered[id] = reopened.state().isAcked(id) ? -1 : reopened.state().deliveryCount(id);
                }
            }
            assertTrue(statesOfThisGeneration.contains(IntBuffer.wrap(recovered)), "seed " + seed + " trial " + trial
                    + ": the recovered state is not the checkpoint plus a prefix of generation " + generation);
            // The reopened log checkpointed what it recovered: put this generation's checkpoint back.
            Files.copy(dir.resolve(AckFiles.CHECKPOINT), copy.resolve(AckFiles.CHECKPOINT),
                    java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        }
        Directories.deleteRecursively(copy);
        Directories.deleteRecursively(dir);
    }

    /** Adds the journal's current pages (read through the page cache) to each page's versions seen so far. */
    private static void notePageVersions(Path journal, List<List<byte[]>> versionsOfPage) throws IOException {
        byte[] bytes = Files.readAllBytes(journal);
        for (int page = 0; page < versionsOfPage.size(); page++) {
            byte[] version = Arrays.copyOfRange(bytes, page * PAGE, (page + 1) * PAGE);
            List<byte[]> versions = versionsOfPage.get(page);
            if (versions.isEmpty() || !Arrays.equals(versions.get(versions.size() - 1), version)) {
                versions.add(version);
            }
        }
    }
}
