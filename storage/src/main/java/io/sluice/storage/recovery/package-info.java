/**
 * Opening a queue after a clean stop or a crash: finishing interrupted deletes, counting segments from
 * Chronicle's index, recovering the ack state, and checking the one segment that can hold a torn
 * tail. {@link io.sluice.storage.recovery.QueueRecovery} is the only entry point.
 */
package io.sluice.storage.recovery;
