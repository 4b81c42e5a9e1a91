package io.sluice.client.internal;

import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.FastThreadLocalThread;

/**
 * The client's network threads ({@code sluice-client-io-*}), made recognisable: a blocking call made on any
 * of them (from a callback, when callbacks run on the network thread) could stall that connection or wait for
 * the thread it occupies, so the client refuses it there, whichever connection the call is for.
 */
public final class NetworkThreads extends DefaultThreadFactory {
    public NetworkThreads() {
        super("sluice-client-io", true);
    }

    /** Whether the calling thread is one of the client's network threads. */
    public static boolean isCurrent() {
        return Thread.currentThread() instanceof NetworkThread;
    }

    @Override
    protected Thread newThread(Runnable task, String name) {
        return new NetworkThread(threadGroup, task, name);
    }

    private static final class NetworkThread extends FastThreadLocalThread {
        NetworkThread(ThreadGroup group, Runnable task, String name) {
            super(group, task, name);
        }
    }
}
