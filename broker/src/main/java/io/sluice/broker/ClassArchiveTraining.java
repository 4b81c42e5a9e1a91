package io.sluice.broker;

import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.config.ConfigLoader;
import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Message;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.client.ReconnectPolicy;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.ChronicleSignals;
import io.sluice.storage.DeferredPosix;
import io.sluice.storage.RecoveryClasses;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;

/**
 * {@code sluice class-archive-training}: the training run of the broker's class-data-sharing archive
 * (docs/operations.md, "Start-up and the class archive"). bin/sluice and the Dockerfile run it under
 * {@code -XX:ArchiveClassesAtExit} (bin/sluice on Java 25 and later under {@code -XX:AOTCacheOutput}), so that the archive holds the classes a start loads on its way to
 * the first confirm: the configuration (Jackson and YAML), logging, Chronicle and its native libraries,
 * the store's recovery of a queue, the admin server, the event loops and the publish path.
 *
 * <p>What it does, on the calling thread, in a temporary data directory that it deletes at the end:
 * starts a broker on any free port (loopback, the embedded defaults otherwise), publishes, consumes and
 * acknowledges through the Java client, stops it, then starts it again on the same data (the store
 * recovers the queue) and publishes once more. Nothing of it outlives the run.
 */
final class ClassArchiveTraining {
    private static final String QUEUE = "class-archive-training";
    private static final int MESSAGES = 200;

    private ClassArchiveTraining() {
    }

    static int run(PrintStream out, PrintStream err) {
        long startedNanos = System.nanoTime();
        Path data;
        try {
            data = Files.createTempDirectory("sluice-class-archive-training");
        } catch (IOException e) {
            err.println("sluice: class-archive-training: cannot make a temporary directory: " + e.getMessage());
            return 1;
        }
        try {
            ChronicleSignals.exitOnTerminationSignals();
            RecoveryClasses.initialise(); // as a broker's start does: the archive then holds every class of the list
            BrokerConfig config = new ConfigLoader().load(null, Map.of("broker.data-dir", data.toString(),
                    "broker.listen-address", "127.0.0.1", "broker.port", "0", "metrics.listen-address", "127.0.0.1",
                    "metrics.port", "0"));
            try (Broker broker = Broker.start(config, startedNanos)) {
                publishAndConsume(broker.port(), MESSAGES);
            }
            DeferredPosix.load(); // which a broker loads in the background once it is listening
            try (Broker broker = Broker.start(config, System.nanoTime())) {
                publishAndConsume(broker.port(), 1);
            }
            out.println("sluice: class-archive-training: done");
            return 0;
        } catch (RuntimeException e) {
            err.println("sluice: class-archive-training failed: " + e);
            return 1;
        } finally {
            deleteTree(data);
        }
    }

    private static void publishAndConsume(int port, int messages) {
        try (Connection connection = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(port)
                .reconnectPolicy(ReconnectPolicy.DISABLED).build())) {
            connection.declareQueue(QUEUE, QueueSettings.EMPTY);
            Producer producer = connection.createProducer(QUEUE, ProducerOptions.DEFAULT);
            CompletableFuture<?>[] confirms = new CompletableFuture<?>[messages];
            for (int i = 0; i < messages; i++) {
                confirms[i] = producer.sendAsync(new byte[256]);
            }
            CompletableFuture.allOf(confirms).join();
            try (Consumer consumer = connection.subscribe(QUEUE, ConsumerOptions.DEFAULT)) {
                for (int i = 0; i < messages; i++) {
                    Message message = consumer.receive(Duration.ofSeconds(30));
                    if (message == null) {
                        throw new IllegalStateException("message " + i + " of " + messages + " did not arrive within 30 s");
                    }
                    message.ack();
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    private static void deleteTree(Path root) {
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(path);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot delete the training's data directory " + root, e);
        }
    }
}
