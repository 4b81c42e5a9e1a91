package io.sluice.broker.cluster;

/**
 * A committed log entry holds a message this node's store cannot hold at all (above
 * {@link io.sluice.storage.StoreConfig#storableMessageBytes}, which follows this node's {@code storage.segment-bytes}):
 * the node stops applying the log at it, as for an entry of a level it does not support (rule R12), since skipping it
 * would give every later message of the queue another id here than on the nodes that stored it (rule R2).
 */
final class EntryNotStorable extends RuntimeException {
    EntryNotStorable(long index, String queue, int messageBytes, int storableBytes) {
        super("log entry " + index + " holds a message of " + messageBytes + " bytes (headers plus payload) for queue '" + queue
                + "', above the " + storableBytes + " bytes a record of this node's store can hold (a quarter of Chronicle's "
                + "block, sized from storage.segment-bytes and storage.max-message-bytes, less the record's header); this node stops applying the log "
                + "instead of skipping it: give it the storage.segment-bytes and storage.max-message-bytes of the other nodes and start it again");
    }
}
