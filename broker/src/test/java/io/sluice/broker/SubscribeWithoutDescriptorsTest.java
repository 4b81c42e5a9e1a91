package io.sluice.broker;

import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Message;
import io.sluice.client.ProducerOptions;
import io.sluice.client.ReconnectPolicy;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * A queue never written opens its files at first use, and a subscription is a use. With the broker's
 * process out of file descriptors, subscribing to such a queue must neither orphan the consumer
 * (answered OK, then never served, its credit taken, every later dispatch failing) nor fail the
 * queue: once descriptors are free again, a message published there reaches that consumer. The broker
 * runs in a child JVM ({@link SubscribeWithoutDescriptorsChild}) that takes every descriptor it has
 * left on command; the client runs here, so only the broker is starved.
 */
@Timeout(120)
class SubscribeWithoutDescriptorsTest {
    @TempDir
    Path dir;

    @Test
    void aSubscriptionMadeWhileDescriptorsAreExhaustedIsServedOnceTheyAreFree() throws Exception {
        // prlimit keeps the hog small: the child's inherited limit may be a million descriptors.
        List<String> command = new ArrayList<>(List.of("prlimit", "--nofile=1024:1024",
                Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        for (String arg : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            if (arg.startsWith("--add-") || arg.startsWith("-Dchronicle.")) {
                command.add(arg);
            }
        }
        command.addAll(List.of("-Xmx256m", "-cp", System.getProperty("java.class.path"),
                SubscribeWithoutDescriptorsChild.class.getName(), dir.resolve("data").toString()));
        Path out = dir.resolve("child.out");
        Process child = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(out.toFile()).start();
        try (OutputStream commands = child.getOutputStream()) {
            subscribeWhileStarved(child, commands, out);
            send(commands, "stop");
            awaitLine(out, child, "stopped");
            assertEquals(0, child.waitFor(30, TimeUnit.SECONDS) ? child.exitValue() : -1);
        } catch (RuntimeException | AssertionError e) {
            throw new AssertionError(e + "; the broker's output ends:\n" + tail(out), e);
        } finally {
            child.destroyForcibly();
        }
        List<String> lines = Files.readAllLines(out, StandardCharsets.UTF_8);
        List<String> failed = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).contains("a dispatch failed") || lines.get(i).contains("A task raised an exception")) {
                failed.add(String.join("\n", lines.subList(i, Math.min(lines.size(), i + 12))));
            }
        }
        assertEquals(List.of(), failed, "no dispatch or queue task failed");
    }

    private static void subscribeWhileStarved(Process child, OutputStream commands, Path out) throws Exception {
        int port = Integer.parseInt(awaitLine(out, child, "port ").substring("port ".length()));
        try (Connection c = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(port)
                .reconnectPolicy(ReconnectPolicy.DISABLED).build())) {
            // The paths the test takes afterwards, once with descriptors (the JDK's and the libraries'
            // classes they need are loaded then; the child loads the broker's own before the hog).
            c.declareQueue("warm-up", QueueSettings.EMPTY);
            c.createProducer("warm-up", ProducerOptions.DEFAULT).send(Payloads.of(1));
            Consumer warm = c.subscribe("warm-up", ConsumerOptions.DEFAULT);
            Message warmed = warm.receive(Duration.ofSeconds(20));
            assertNotNull(warmed);
            warmed.ack();
            warm.close();
            c.declareQueue("never-written", QueueSettings.EMPTY);
            send(commands, "hog");
            awaitLine(out, child, "hogged ");
            Consumer consumer = c.subscribe("never-written", ConsumerOptions.DEFAULT);
            // The premise: the queue handled the subscription while out of descriptors, and said so (with
            // the fix, that it serves the consumer later; without, the task's failure).
            awaitLine(out, child, "cannot open its segments");
            send(commands, "release");
            awaitLine(out, child, "released");
            c.createProducer("never-written", ProducerOptions.DEFAULT).send(Payloads.of(7));
            Message m = consumer.receive(Duration.ofSeconds(20));
            assertNotNull(m, "the consumer subscribed while the broker had no descriptor gets the message");
            assertEquals(7, Payloads.sequence(m.payload()));
            m.ack();
            consumer.close();
        }
    }

    private static void send(OutputStream commands, String command) throws IOException {
        commands.write((command + "\n").getBytes(StandardCharsets.US_ASCII));
        commands.flush();
    }

    /** The first line of the child's output containing {@code text}, once it is there; fails if the child dies first. */
    private static String awaitLine(Path out, Process child, String text) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            if (Files.exists(out)) {
                for (String line : Files.readAllLines(out, StandardCharsets.UTF_8)) {
                    if (line.contains(text)) {
                        return line;
                    }
                }
            }
            if (!child.isAlive()) {
                break;
            }
            Thread.sleep(10); // polling the child's output file, not waiting for a state
        }
        throw new AssertionError("the broker did not print '" + text + "' within 30 s; its output ends:\n" + tail(out));
    }

    private static String tail(Path file) throws IOException {
        String text = Files.readString(file, StandardCharsets.UTF_8);
        return text.substring(Math.max(0, text.length() - 6000));
    }
}
