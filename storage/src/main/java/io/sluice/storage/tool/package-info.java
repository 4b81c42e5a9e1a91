/**
 * Offline tools over a data directory: {@code verify} checks every record's checksum and the ack
 * state files, {@code dump} prints a queue's messages. Both only read: segments are opened with
 * Chronicle's read-only mode, {@code store.lock} is not touched (a running broker may hold it), and
 * the ack state is recovered from a private copy of the queue's {@code acks/} directory. A queue with a segment file
 * or metadata file Chronicle cannot read is read through a private directory of links to the files it can
 * ({@link io.sluice.storage.tool.SegmentScan}), and the others are reported. Run them
 * with {@code bin/sluice-storage-tool}.
 */
package io.sluice.storage.tool;
