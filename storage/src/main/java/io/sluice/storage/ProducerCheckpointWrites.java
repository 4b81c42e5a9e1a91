package io.sluice.storage;

import io.sluice.storage.dedup.ProducerCheckpoint;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;

/**
 * The writes of one queue's producer checkpoint, refused from the moment the queue starts to close: a
 * late write must never land in the directory of a deleted queue, or of the queue re-created under its
 * name, whose producers it would claim. A write in progress when the close begins finishes first, so it
 * is done before a delete renames the directory.
 *
 * <p>Thread-safe: writes ({@code sluice-producer-state}) and the refusal (the queue's close) take this
 * object's monitor, held across a write.
 */
final class ProducerCheckpointWrites {
    private final String queueName;
    private final Path directory;
    private boolean refused;

    ProducerCheckpointWrites(String queueName, Path directory) {
        this.queueName = queueName;
        this.directory = directory;
    }

    /** Writes {@code image} ({@link ProducerCheckpoint#encode}) into the queue's directory, unless refused. */
    synchronized void write(ByteBuffer image) throws IOException {
        if (refused) {
            throw new StorageException("queue '" + queueName + "' is closed: its producer checkpoint is not written");
        }
        ProducerCheckpoint.write(directory, image);
    }

    /** Refuses every later write; waits for one in progress. */
    synchronized void refuse() {
        refused = true;
    }
}
