package io.sluice.storage;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Initialises the classes a store's open initialises first (Chronicle Queue's and the store's own, listed in
 * {@value #LIST} beside this class) ahead of the open, on a thread the open waits for. In a cold JVM the first open
 * spends about half its CPU initialising them; the broker does it on its start thread {@code sluice-start-signals}
 * after Chronicle's set-up, while its main thread reads the configuration, so that the store's recovery starts with
 * them done (docs/performance.md, "Restart after kill -9"). Nothing is opened, read or written: only static
 * initialisers run, which the open would run anyway.
 *
 * <p>Call it before any store opens, never beside an open: two threads initialising classes that refer to each other
 * in their static initialisers, each from its own end, would wait for each other. Call it after
 * {@link ChronicleSignals#exitOnTerminationSignals()}, which must be Chronicle's first use. A listed name that is not
 * a class, or whose initialiser fails, is skipped (and would fail the same way in the open): a stale list costs time,
 * not correctness.
 */
public final class RecoveryClasses {
    static final String LIST = "recovery-classes.txt";
    private static final Logger LOG = LoggerFactory.getLogger(RecoveryClasses.class);

    private RecoveryClasses() {
    }

    /** Initialises every listed class that is there; returns how many it initialised. */
    public static int initialise() {
        ClassLoader loader = RecoveryClasses.class.getClassLoader();
        int initialised = 0;
        for (String name : names()) {
            try {
                Class.forName(name, true, loader);
                initialised++;
            } catch (ClassNotFoundException | LinkageError e) {
                LOG.debug("Class {} of {} not initialised ahead of the store's open: {}", name, LIST, e.toString());
            }
        }
        return initialised;
    }

    /** The listed names, in the file's order; empty if the list is missing from the classpath. */
    static List<String> names() {
        List<String> names = new ArrayList<>();
        try (InputStream in = RecoveryClasses.class.getResourceAsStream(LIST)) {
            if (in == null) {
                return names;
            }
            BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
            for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                String name = line.strip();
                if (!name.isEmpty() && !name.startsWith("#")) {
                    names.add(name);
                }
            }
        } catch (IOException e) {
            LOG.debug("{} not read: {}", LIST, e.toString());
        }
        return names;
    }
}
