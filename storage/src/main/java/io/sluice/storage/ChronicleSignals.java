package io.sluice.storage;

import net.openhft.chronicle.core.Jvm;
import sun.misc.Signal;

/**
 * Makes SIGTERM and SIGINT end the JVM normally again — running its shutdown hooks, with the status a
 * shell expects (128 + the signal number), or for SIGTERM the program's own clean stop ({@link #stopOnSigterm}) —
 * once Chronicle Queue and the native libraries under it are loaded. Chronicle replaces the JVM's handlers for these
 * signals with a chain of its own, and loading the native code beneath it left the process dying on SIGTERM without
 * running any hook (seen on this project's machines: a broker killed with {@code kill} never shut down gracefully).
 *
 * <p>Call {@link #exitOnTerminationSignals()} before the store opens (so Chronicle's chain, set up
 * then, includes the handler) and again once it is open (so the JVM-level handler is the last one
 * installed, after every native library has loaded). The first call also defers Chronicle's POSIX binding to its
 * first use ({@link DeferredPosix}).
 */
public final class ChronicleSignals {
    private static boolean chained;
    /** What SIGTERM does instead of exiting with 143, once set ({@link #stopOnSigterm}). */
    private static volatile Runnable sigtermStop;

    private ChronicleSignals() {
    }

    public static synchronized void exitOnTerminationSignals() {
        if (!chained) {
            chained = true;
            // The first use of Chronicle's Jvm class, which loads the POSIX binding unless it is deferred first.
            DeferredPosix.install();
            Jvm.addSignalHandler(signal -> exitFor(signal));
        }
        for (String name : new String[] {"TERM", "INT"}) {
            handleInJava(name);
        }
    }

    /**
     * Makes SIGTERM run {@code stop} on a thread of its own, at each SIGTERM, instead of {@code System.exit(143)}: a program
     * that stops cleanly on it and exits with the status it chooses (a broker: 0 after a clean stop, which systemd and
     * container runtimes count as success where they count 143 as a failure). {@code stop} must be safe to run more than
     * once. SIGINT still exits with 130 through the shutdown hooks. Takes SIGTERM at once, without loading Chronicle
     * ({@link #exitOnTerminationSignals} does, which a program may call on a thread of its own while it gets ready): until
     * then a SIGTERM met the JVM's own handler, which exits with 143.
     */
    public static void stopOnSigterm(Runnable stop) {
        sigtermStop = stop;
        handleInJava("TERM");
    }

    private static void handleInJava(String signalName) {
        try {
            Signal.handle(new Signal(signalName), signal -> exitFor(signal.getName()));
        } catch (IllegalArgumentException unsupported) {
            // This platform does not deliver that signal to Java code: nothing to restore.
        }
    }

    private static void exitFor(String signal) {
        Runnable stop = sigtermStop;
        if ("TERM".equals(signal) && stop != null) {
            Thread stopping = new Thread(stop, "sluice-signal-stop");
            stopping.start();
            return;
        }
        int status = "TERM".equals(signal) ? 143 : "INT".equals(signal) ? 130 : -1;
        if (status < 0) {
            return;
        }
        // System.exit blocks until the shutdown hooks finish; run it off the signal handler's thread.
        Thread exit = new Thread(() -> System.exit(status), "sluice-signal-exit");
        exit.start();
    }
}
