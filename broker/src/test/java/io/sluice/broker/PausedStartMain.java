package io.sluice.broker;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The broker's command line in a child JVM, its start held at one {@link Main.StartupPoint} (the first argument; the rest
 * are the broker's) until a line arrives on standard input: the test signals the process while it is held there, sees
 * what the signal did, then lets the start go on. Prints {@link #PAUSED} and the point once held.
 */
final class PausedStartMain {
    static final String PAUSED = "sluice-test: start held at ";

    private PausedStartMain() {
    }

    public static void main(String[] args) {
        Main.StartupPoint held = Main.StartupPoint.valueOf(args[0]);
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        System.exit(Main.runBroker(Arrays.copyOfRange(args, 1, args.length), System.out, System.err, point -> {
            if (point == held) {
                System.out.println(PAUSED + point);
                try {
                    stdin.readLine();
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }
        }));
    }
}
