package io.sluice.broker.queue;

import io.sluice.broker.flow.QuotaSettings;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.FrameType;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * docs/protocol.md's tables are the protocol's reference: they must say what the code does. Frame
 * types, error codes (with whether each is retriable) and queue settings (keys, types and the
 * overflow policies) are read from the page and compared with the code, both ways.
 */
class ProtocolDocTest {
    private static final Path PAGE = Path.of("..", "docs", "protocol.md");

    /** The rows of the table whose header row starts with {@code header}, as trimmed cells without backquotes. */
    private static List<List<String>> table(String header) throws IOException {
        List<String> lines = Files.readAllLines(PAGE);
        List<List<String>> rows = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).startsWith(header)) {
                for (int j = i + 2; j < lines.size() && lines.get(j).startsWith("|"); j++) {
                    String line = lines.get(j);
                    rows.add(Arrays.stream(line.substring(1, line.length() - 1).split("\\|"))
                            .map(c -> c.trim().replace("`", "")).toList());
                }
                return rows;
            }
        }
        throw new AssertionError(PAGE + " has no table headed " + header);
    }

    @Test
    void theFrameTypeTableIsTheFrameTypes() throws IOException {
        Map<String, String> documented = new TreeMap<>();
        for (List<String> row : table("| code | name | direction |")) {
            documented.put(row.get(1), row.get(0).toLowerCase(Locale.ROOT));
        }
        Map<String, String> code = Arrays.stream(FrameType.values()).collect(Collectors.toMap(Enum::name,
                t -> String.format("0x%02x", t.code()), (a, b) -> a, TreeMap::new));
        assertEquals(code, documented);
    }

    @Test
    void theErrorCodeTableIsTheErrorCodesWithTheirRetriability() throws IOException {
        Map<String, String> documented = new TreeMap<>();
        for (List<String> row : table("| code | name | meaning | retriable |")) {
            documented.put(row.get(1), row.get(0) + " " + (row.get(3).startsWith("yes") ? "retriable" : "final"));
        }
        Map<String, String> code = Arrays.stream(ErrorCode.values()).collect(Collectors.toMap(Enum::name,
                e -> e.code() + " " + (e.retriable() ? "retriable" : "final"), (a, b) -> a, TreeMap::new));
        assertEquals(code, documented);
    }

    @Test
    void theQueueSettingsTableIsTheSettingsADeclareMayCarry() throws IOException {
        Map<String, String> documented = new TreeMap<>();
        String policies = null;
        for (List<String> row : table("| key | type | values | meaning |")) {
            documented.put(row.get(0), row.get(1));
            if (row.get(0).equals("overflowPolicy")) {
                policies = row.get(2);
            }
        }
        Map<String, String> code = new TreeMap<>();
        QueueOptions.KNOWN_KEYS.forEach((key, type) -> code.put(key, switch (type) {
            case WHOLE_NUMBER -> "INT64";
            case BOOLEAN -> "BOOLEAN";
            case QUEUE_NAME, OVERFLOW_POLICY -> "STRING";
        }));
        assertEquals(code, documented);
        List<String> wireNames = Arrays.stream(QuotaSettings.OverflowPolicy.values())
                .map(p -> p.name().toLowerCase(Locale.ROOT).replace('_', '-')).toList();
        assertEquals(wireNames, Arrays.stream(policies.split(",")).map(String::trim).toList());
        wireNames.forEach(name -> QuotaSettings.OverflowPolicy.parse(name, "overflowPolicy")); // each documented name is accepted
    }
}
