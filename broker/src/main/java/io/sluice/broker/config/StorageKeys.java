package io.sluice.broker.config;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Rewords the storage module's validation ({@code StoreConfig.Builder.build()}), which names its Java
 * fields ({@code segmentBytes}), in the YAML keys an operator writes ({@code storage.segment-bytes}).
 * The storage module knows nothing of the broker's configuration file, so the translation lives here.
 */
final class StorageKeys {
    private static final String PREFIX = "invalid storage configuration: ";
    private static final Map<String, String> KEYS = Map.ofEntries(
            Map.entry("durability", "storage.durability"),
            Map.entry("syncIntervalMs", "storage.sync-interval-ms"),
            Map.entry("segmentBytes", "storage.segment-bytes"),
            Map.entry("maxMessageBytes", "storage.max-message-bytes"),
            Map.entry("reservedDiskBytes", "storage.reserved-disk-bytes"),
            Map.entry("ackJournalBytes", "storage.ack-journal-bytes"),
            Map.entry("relocateMaxLiveRatio", "storage.relocate-max-live-ratio"),
            Map.entry("relocateMaxLiveMessages", "storage.relocate-max-live-messages"),
            Map.entry("relocateAfterMs", "storage.relocate-after-ms"),
            Map.entry("readAheadMessages", "storage.read-ahead-messages"));
    private static final Pattern WORD = Pattern.compile("\\b[a-z][A-Za-z]*\\b");

    private StorageKeys() {
    }

    /** One problem per storage rule broken, each naming YAML keys instead of field names. */
    static List<String> problems(String storageMessage) {
        String text = storageMessage.startsWith(PREFIX) ? storageMessage.substring(PREFIX.length()) : storageMessage;
        List<String> problems = new ArrayList<>();
        for (String problem : text.split("; ")) {
            Matcher m = WORD.matcher(problem);
            StringBuilder reworded = new StringBuilder();
            while (m.find()) {
                m.appendReplacement(reworded, Matcher.quoteReplacement(KEYS.getOrDefault(m.group(), m.group())));
            }
            m.appendTail(reworded);
            problems.add(reworded.toString());
        }
        return problems;
    }
}
