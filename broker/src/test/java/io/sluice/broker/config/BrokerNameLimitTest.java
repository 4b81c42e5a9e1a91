package io.sluice.broker.config;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The broker sends its name in every HELLO_OK, a string of at most 65,535 bytes of UTF-8: a longer name was accepted at
 * start and every HELLO then failed with INTERNAL_ERROR and a stack trace. A control character would reach clients'
 * logs and screens as it is.
 */
class BrokerNameLimitTest {
    @TempDir
    Path dir;

    private static String refused(String name) {
        return assertThrows(ConfigException.class, () -> new ConfigLoader().load(null, Map.of("broker.name", name))).getMessage();
    }

    @Test
    void aNamePastWhatAHelloOkCarriesIsRefusedNamingTheKeyAndTheLimit() {
        assertEquals("invalid configuration:\n  - broker.name is 65536 bytes of UTF-8, more than the 65535 a HELLO_OK carries;"
                + " choose a shorter name", refused("b".repeat(65_536)));
        assertEquals("invalid configuration:\n  - broker.name is 65536 bytes of UTF-8, more than the 65535 a HELLO_OK carries;"
                + " choose a shorter name", refused("é".repeat(32_768)));
        new ConfigLoader().load(null, Map.of("broker.name", "b".repeat(65_535))); // the limit itself is a name
    }

    @Test
    void aNameWithAControlCharacterIsRefused() throws Exception {
        // In a file: an override's value is parsed as YAML, which refuses a NUL before the check is reached.
        Path file = dir.resolve("sluice.yaml");
        for (String[] c : new String[][] {{"east\\0", "0000"}, {"east\\nwest", "000A"}, {"east\\e[2J", "001B"}}) {
            Files.writeString(file, "broker:\n  name: \"" + c[0] + "\"\n");
            String m = assertThrows(ConfigException.class, () -> new ConfigLoader().load(file, Map.of())).getMessage();
            assertEquals("invalid configuration:\n  - broker.name holds a control character (U+" + c[1] + "); a broker's name is"
                    + " printable text", m);
        }
    }
}
