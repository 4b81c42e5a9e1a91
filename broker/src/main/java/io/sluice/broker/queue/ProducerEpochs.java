package io.sluice.broker.queue;

import java.util.Arrays;

/**
 * The epochs a cluster's leader resolved for the named producers of one PUBLISH frame when it admitted it
 * (docs/replication.md, rule R11), carried in the frame's log entry so that every node fences the same
 * messages when it applies the entry, whatever connections it has: a producer not listed publishes at epoch
 * 0 (an unnamed producer, or a named one no connection of the leader's holds, which its epoch then fences);
 * -1 marks one whose newer instance registered on another connection.
 *
 * <p>Immutable. A frame holds the messages of one producer or a few, so lookups scan the array.
 */
public final class ProducerEpochs {
    /** No named producer in the frame: every node checks it as before named producers were replicated. */
    public static final ProducerEpochs NONE = new ProducerEpochs(new long[0], new int[0]);

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
