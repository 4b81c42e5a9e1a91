package io.sluice.client.internal;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class SerialExecutorTest {
    /**
     * A delegate that refuses a drain once: the refusal reaches the caller, and the next task handed over drains both, in
     * order. It fails if the executor stays marked as draining: no task of it would ever run again.
     */
    @Test
    void aRefusedDrainLeavesTheExecutorUsable() {
        List<String> ran = new ArrayList<>();
        boolean[] refuse = {true};
        Executor inline = task -> {
            if (refuse[0]) {
                refuse[0] = false;
                throw new RejectedExecutionException("no thread");
            }
            task.run();
        };
        SerialExecutor serial = new SerialExecutor(inline);
        assertThrows(RejectedExecutionException.class, () -> serial.execute(() -> ran.add("first")));
        serial.execute(() -> ran.add("second"));
        assertEquals(List.of("first", "second"), ran);
    }
}
