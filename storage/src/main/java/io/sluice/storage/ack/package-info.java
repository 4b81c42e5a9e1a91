/**
 * Which messages of a queue are acknowledged, and how that survives a crash.
 *
 * <p>{@link io.sluice.storage.ack.AckTracker} holds the state in memory at about one bit per
 * message of the live (unreclaimed) log; {@link io.sluice.storage.ack.AckJournal} records every
 * change in a memory-mapped file so a process crash loses nothing; {@link
 * io.sluice.storage.ack.AckCheckpoint} writes the whole state when the journal fills up; {@link
 * io.sluice.storage.ack.AckLog} ties the three together and is what the segment store calls.
 * Nothing here is thread-safe: the owning queue's lock guards every call.
 */
package io.sluice.storage.ack;
