package io.sluice.broker.queue;

import java.util.Arrays;

/**
 * The epochs a cluster's leader resolved for the named producers of one PUBLISH frame when it admitted it
 * (docs/replication.md, rule R11), carried in the frame's log entry so that every node fences the same
 * messages when it applies the entry, whatever connections it has: a producer not listed publishes at epoch
 * 0 (an unnamed producer, or a named one no connection of the leader's holds, which its epoch then fences);
 * -1 marks one the leader fenced: a newer instance registered on another connection, or no connection of the leader's
 * holds a producer its table knows as named. {@link #ADMITTED_WITHOUT_EPOCH} marks one a leader could not classify.
 *
 * <p>Immutable. A frame holds the messages of one producer or a few, so lookups scan the array.
 */
public final class ProducerEpochs {
    /** No named producer in the frame: every node checks it as before named producers were replicated. */
    public static final ProducerEpochs NONE = new ProducerEpochs(new long[0], new int[0]);
    /**
     * The epoch of a producer a leader admitted without an epoch to hold it to: its producer table lost its epoch marks
     * (rule "lost marks refuse no resume", docs/protocol.md), so it cannot tell a named producer that no connection of its
     * holds from an unnamed one, and admits it, as it would on a single broker. Every node then checks the producer's
     * messages at the epoch its own table holds for it: none fences them by an epoch only it knows (the nodes that kept
     * their marks would, and hold less than the leader). Never an epoch a table grants (those are 0 or more); entry level 8
     * (rule R12), below which the leader leaves such producers out, as before.
     */
    public static final int ADMITTED_WITHOUT_EPOCH = Integer.MIN_VALUE;

    private final long[] producerIds;
    private final int[] epochs;

    public ProducerEpochs(long[] producerIds, int[] epochs) {
        if (producerIds.length != epochs.length) {
            throw new IllegalArgumentException(producerIds.length + " producer ids but " + epochs.length + " epochs");
        }
        this.producerIds = producerIds.clone();
        this.epochs = epochs.clone();
    }

    /** The epoch resolved for {@code producerId}: 0 if it is not listed. */
    public int epochOf(long producerId) {
        for (int i = 0; i < producerIds.length; i++) {
            if (producerIds[i] == producerId) {
                return epochs[i];
            }
        }
        return 0;
    }

    /** These epochs less the producers {@link #ADMITTED_WITHOUT_EPOCH}: what a leader below entry level 8 writes. */
    public ProducerEpochs withoutAdmittedWithoutEpoch() {
        int kept = 0;
        for (int epoch : epochs) {
            kept += epoch == ADMITTED_WITHOUT_EPOCH ? 0 : 1;
        }
        if (kept == epochs.length) {
            return this;
        }
        long[] ids = new long[kept];
        int[] values = new int[kept];
        for (int i = 0, j = 0; i < epochs.length; i++) {
            if (epochs[i] != ADMITTED_WITHOUT_EPOCH) {
                ids[j] = producerIds[i];
                values[j++] = epochs[i];
            }
        }
        return kept == 0 ? NONE : new ProducerEpochs(ids, values);
    }

    public int size() {
        return producerIds.length;
    }

    public long producerId(int index) {
        return producerIds[index];
    }

    public int epoch(int index) {
        return epochs[index];
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ProducerEpochs other && Arrays.equals(producerIds, other.producerIds) && Arrays.equals(epochs, other.epochs);
    }

    @Override
    public int hashCode() {
        return 31 * Arrays.hashCode(producerIds) + Arrays.hashCode(epochs);
    }

    @Override
    public String toString() {
        StringBuilder s = new StringBuilder("ProducerEpochs[");
        for (int i = 0; i < producerIds.length; i++) {
            s.append(i == 0 ? "" : ", ").append(producerIds[i]).append('@').append(epochs[i]);
        }
        return s.append(']').toString();
    }
}
