package io.sluice.broker.queue;

import io.sluice.storage.QueueStore;

import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Counts the checkpoints of a queue's ack state begun from now on, each written as it would have been: the store's
 * {@code AckLog} and its checkpoint writer are reached by reflection, because nothing but a test needs them.
 */
final class AckCheckpointAttempts {
    private final AtomicInteger begun = new AtomicInteger();

    private AckCheckpointAttempts() {
    }

    /** Starts counting on {@code queue}; call on the queue's executor, which owns its ack state. */
    static AckCheckpointAttempts count(QueueStore queue) throws ReflectiveOperationException {
        Object ackLog = field(QueueStore.class, "ackLog").get(queue);
        Field writeField = field(ackLog.getClass(), "checkpointWrite");
        Object write = writeField.get(ackLog);
        AckCheckpointAttempts attempts = new AckCheckpointAttempts();
        Class<?> type = writeField.getType();
        writeField.set(ackLog, Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, (proxy, method, args) -> {
            if (method.getDeclaringClass() == type) {
                attempts.begun.incrementAndGet();
            }
            method.setAccessible(true); // the interface is the storage package's own
            try {
                return method.invoke(write, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        }));
        return attempts;
    }

    /** Checkpoints begun since {@link #count}. */
    int begun() {
        return begun.get();
    }

    private static Field field(Class<?> type, String name) throws NoSuchFieldException {
        Field field = type.getDeclaredField(name);
        field.setAccessible(true);
        return field;
    }
}
