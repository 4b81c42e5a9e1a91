/**
 * The read-ahead thread: touches the records a lagging reader is about to read, within a budget, so
 * that cold reads fault on this thread rather than on the broker's event loops.
 */
package io.sluice.storage.readahead;
