package io.sluice.client;

import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * The application hears of the ERRORs the broker sends to no request through the connection's {@link ErrorListener}, in
 * the order they came: among them the STORAGE_FAILED of an ack the queue's storage failed to apply, which the client
 * used to log only, so the application believed its ack taken. A listener that throws does not end the connection.
 */
class ErrorListenerTest {
    private final FakeBroker broker = new FakeBroker();
    private Connection connection;

    @AfterEach
    void stop() {
        if (connection != null) {
            connection.close();
        }
        broker.close();
    }

    @Test
    void theErrorsToNoRequestReachTheListenerInOrder() throws Exception {
        BlockingQueue<String> heard = new LinkedBlockingQueue<>();
        connection = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                .requestTimeout(Duration.ofSeconds(5)).errorListener((code, message) -> {
                    heard.add(code + " " + message);
                    throw new IllegalStateException("a listener that throws (test)");
                }).build());
        String storageFailed = "ack of message 3 on consumer 1 of queue 'orders' was not applied: the queue's storage"
                + " failed to read it (an I/O error); it stays in the queue and is delivered again";
        broker.send(new ErrorFrame(0, ErrorCode.STORAGE_FAILED, storageFailed));
        broker.send(new ErrorFrame(0, ErrorCode.UNKNOWN_MESSAGE_ID, "ack of message ids 9..9 on consumer 1 of queue 'orders'"));
        broker.send(new ErrorFrame(0, 60000, "a code from a newer broker"));

        assertEquals("STORAGE_FAILED " + storageFailed, heard.poll(10, TimeUnit.SECONDS));
        assertEquals("UNKNOWN_MESSAGE_ID ack of message ids 9..9 on consumer 1 of queue 'orders'", heard.poll(10, TimeUnit.SECONDS));
        assertEquals("UNKNOWN a code from a newer broker", heard.poll(10, TimeUnit.SECONDS));
        connection.declareQueue("orders", QueueSettings.EMPTY); // the connection goes on, its requests answered
        assertNull(heard.poll(), "an answered request is not the listener's: " + heard);
    }
}
