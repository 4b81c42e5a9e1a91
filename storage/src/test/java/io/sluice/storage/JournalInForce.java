package io.sluice.storage;

import io.sluice.storage.ack.AckJournal;
import io.sluice.storage.ack.AckLog;

import java.lang.reflect.Field;

/** For tests that hold a queue's ack journal's force ({@code HeldForce}): the journal, and whether a thread waits in its force. */
final class JournalInForce {
    private JournalInForce() {
    }

    /** The queue's ack journal, reached by reflection because nothing else needs it. */
    static AckJournal journalOf(QueueStore queue) throws ReflectiveOperationException {
        AckLog ackLog = (AckLog) field(QueueStore.class, "ackLog").get(queue);
        return (AckJournal) field(AckLog.class, "journal").get(ackLog);
    }

    /** Whether {@code thread} is blocked or waiting inside {@link AckJournal#force()}: behind a held force. */
    static boolean waits(Thread thread) {
        Thread.State state = thread.getState();
        if (state != Thread.State.WAITING && state != Thread.State.BLOCKED) {
            return false;
        }
        for (StackTraceElement frame : thread.getStackTrace()) {
            if (frame.getClassName().equals(AckJournal.class.getName()) && frame.getMethodName().equals("force")) {
                return true;
            }
        }
        return false;
    }

    private static Field field(Class<?> type, String name) throws NoSuchFieldException {
        Field field = type.getDeclaredField(name);
        field.setAccessible(true);
        return field;
    }
}
