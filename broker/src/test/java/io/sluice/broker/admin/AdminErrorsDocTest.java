package io.sluice.broker.admin;

import io.sluice.broker.error.ErrorCodes;
import io.sluice.protocol.ErrorCode;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * docs/operations.md's list of the admin API's errors ("Errors are ...") is the API's catalogue: every code the API
 * answers is there with its status, and nothing is there that the API does not answer. Found by a review: 429
 * {@code resource_limit} (a declare past limits.max-queues, {@code AdminApiTest}) was missing, and so were the cluster's
 * and the storage's codes. The codes are read where the API makes them: the {@code ApiException}s and literal answers of
 * the admin package, the refusals of the cluster's membership and entry level it passes on, and the broker's error codes
 * a queue change is refused with ({@link ErrorCodes} gives their status and name).
 */
class AdminErrorsDocTest {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    private static final Path ADMIN = ROOT.resolve("broker/src/main/java/io/sluice/broker/admin");
    /**
     * The codes a declare, delete or purge may be refused with by the queues (QueueEndpoints.refusal, awaitReplicated):
     * RESOURCE_LIMIT for limits.max-queues or a queue out of file descriptors, STORAGE_FAILED for a purge of a queue whose
     * store failed.
     */
    private static final List<ErrorCode> QUEUE_CHANGE_REFUSALS = List.of(ErrorCode.INVALID_QUEUE_NAME, ErrorCode.INVALID_QUEUE_SETTING,
            ErrorCode.UNKNOWN_QUEUE, ErrorCode.QUEUE_EXISTS_WITH_DIFFERENT_SETTINGS, ErrorCode.QUEUE_BEING_DELETED,
            ErrorCode.NOT_LEADER, ErrorCode.RESOURCE_LIMIT, ErrorCode.STORAGE_FAILED);

    @Test
    void everyErrorTheApiAnswersIsDocumentedWithItsStatusAndNoOther() throws IOException {
        Map<String, Set<Integer>> answered = new TreeMap<>();
        // new ApiException(429, "too_many_failures", ...), answers.error(exchange, 500, "internal_error", ...), and the
        // answer written whole while the store recovers: respond(exchange, 503, AdminAnswers.JSON, "{\"error\":\"not_ready\"...
        List<Pattern> literals = List.of(Pattern.compile("(?:new ApiException\\(|error\\(exchange, )(\\d{3}), \"([a-z_]+)\""),
                Pattern.compile("respond\\(exchange, (\\d{3}), AdminAnswers\\.JSON, \"\\{\\\\\"error\\\\\":\\\\\"([a-z_]+)"));
        try (Stream<Path> files = Files.list(ADMIN)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".java")).toList()) {
                String source = Files.readString(file);
                for (Pattern literal : literals) {
                    Matcher m = literal.matcher(source);
                    while (m.find()) {
                        answered.computeIfAbsent(m.group(2), c -> new TreeSet<>()).add(Integer.parseInt(m.group(1)));
                    }
                }
            }
        }
        for (ErrorCode code : QUEUE_CHANGE_REFUSALS) {
            answered.computeIfAbsent(ErrorCodes.httpName(code), c -> new TreeSet<>()).add(ErrorCodes.httpStatus(code));
        }
        // The cluster's own refusals, passed on under their codes with the statuses ClusterAdmin gives them.
        addCodes(answered, ROOT.resolve("broker/src/main/java/io/sluice/broker/cluster/MembershipChanges.java"),
                "Refused\\(\"([a-z_]+)\"");
        addCodes(answered, ADMIN.resolve("ClusterAdmin.java"), "case [A-Z_]+ -> \"([a-z_]+)\"");
        assertTrue(answered.keySet().containsAll(Set.of("resource_limit", "too_many_failures", "not_ready", "internal_error",
                "duplicate_node", "nodes_behind")), "the codes were found where the API makes them: " + answered.keySet());

        Map<String, Set<Integer>> documented = documented();
        Map<String, Set<Integer>> undocumented = new TreeMap<>();
        answered.forEach((code, statuses) -> {
            Set<Integer> missing = new TreeSet<>(statuses);
            missing.removeAll(documented.getOrDefault(code, Set.of()));
            if (!documented.containsKey(code) || !missing.isEmpty() && !statuses.isEmpty()) {
                undocumented.put(code, missing);
            }
        });
        assertEquals(Map.of(), undocumented, "codes (and statuses) the admin API answers that docs/operations.md does not list");
        Set<String> stale = new TreeSet<>(documented.keySet());
        stale.removeAll(answered.keySet());
        assertEquals(Set.of(), stale, "codes docs/operations.md lists that the admin API never answers");
    }

    /** Codes whose status is decided at run time: each must be listed, under the status the list gives it. */
    private static void addCodes(Map<String, Set<Integer>> answered, Path file, String regex) throws IOException {
        Matcher m = Pattern.compile(regex).matcher(Files.readString(file));
        while (m.find()) {
            answered.computeIfAbsent(m.group(1), c -> new TreeSet<>());
        }
    }

    /** The list's codes, each under the statuses it is listed with: "400 `a` / `b`, 401 `c`" lists a and b as 400. */
    private static Map<String, Set<Integer>> documented() throws IOException {
        String doc = Files.readString(ROOT.resolve("docs/operations.md"));
        int start = doc.indexOf("Errors are `{\"error\": \"<code>\"");
        assertTrue(start >= 0, "docs/operations.md lists the admin API's errors");
        int end = doc.indexOf("No request takes a query string", start);
        String list = doc.substring(start, end);
        Map<String, Set<Integer>> documented = new TreeMap<>();
        Matcher m = Pattern.compile("\\b([1-5]\\d\\d)\\b|`([a-z_]+)`").matcher(list);
        Integer status = null;
        while (m.find()) {
            if (m.group(1) != null) {
                status = Integer.parseInt(m.group(1));
            } else if (status != null) {
                documented.computeIfAbsent(m.group(2), c -> new TreeSet<>()).add(status);
            }
        }
        return documented;
    }
}
