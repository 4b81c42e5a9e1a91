package io.sluice.client;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * ConnectionOptions.build() refuses what HELLO cannot carry, every problem in one exception: a user name, password or
 * client name longer than the 65,535 UTF-8 bytes of a wire string would have every connect attempt throw building HELLO
 * on the network thread.
 */
class ConnectionOptionsTest {
    @Test
    void stringsLongerThanHelloCarriesAreRefusedTogether() {
        IllegalArgumentException refused = assertThrows(IllegalArgumentException.class, () -> ConnectionOptions.builder()
                .credentials("u".repeat(70_000), "é".repeat(40_000)).clientName("c".repeat(65_536)).build());
        String message = refused.getMessage();
        assertTrue(message.contains("user is 70000 UTF-8 bytes, above the limit of 65535")
                && message.contains("password is 80000 UTF-8 bytes") && message.contains("clientName is 65536 UTF-8 bytes"),
                message);
    }
}
