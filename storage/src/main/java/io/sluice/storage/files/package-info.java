/**
 * The store's file descriptors: how many a queue holds, the process's open-file limit
 * ({@code RLIMIT_NOFILE}) and the checks that compare them, so that running out of descriptors
 * refuses one queue's operation with a clear error instead of failing it for good or stalling others;
 * and files replaced whole ({@code AtomicFiles}: temporary file, force, rename, directory force),
 * which the ack and producer checkpoints are; small files of checksummed fixed fields, the store's hints
 * ({@code ChecksummedFields}); and the release of a file mapping when it is closed ({@code MappedBufferUnmapper}).
 */
package io.sluice.storage.files;
