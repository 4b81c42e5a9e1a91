package io.sluice.broker.admin;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sluice.broker.FlagValues;
import io.sluice.broker.UnreadableFile;
import io.sluice.protocol.QueueSettings;

import java.io.Console;
import java.io.IOException;
import java.io.PrintStream;
import java.net.ConnectException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.function.Function;

/**
 * {@code sluice admin}: the admin API from the command line.
 * <pre>
 * sluice admin [--url http://127.0.0.1:7673] [--user U --password P] [--json] COMMAND
 *   queues | queue NAME | declare NAME [key=value ...] | delete NAME | purge NAME
 *   connections | consumers | producers | close-connection ID
 *   cluster | transfer-leader NODE_ID | feature-level LEVEL | add-node ID HOST RAFT_PORT CLIENT_PORT [SNAPSHOT_PORT] | remove-node ID
 * </pre>
 * Prints tables by default, the API's JSON with {@code --json}. Exit status: 0 done, 1 the broker
 * refused or could not be reached, 2 bad arguments.
 */
public final class AdminCli {
    public static final String DEFAULT_URL = "http://127.0.0.1:7673";
    public static final String USAGE = "usage: sluice admin [--url " + DEFAULT_URL + "] [--user U [--password-file FILE]] [--json]"
            + " queues|queue NAME|declare NAME [key=value ...]|delete NAME|purge NAME|connections|consumers|producers"
            + "|close-connection ID|cluster|transfer-leader NODE_ID|feature-level LEVEL|add-node ID HOST RAFT_PORT CLIENT_PORT [SNAPSHOT_PORT]|remove-node ID\n  with --user and no password flag the password is asked on the terminal;"
            + " --password P also works but shows it to every user of ps;\n  a value may also follow an '=' (--user=U,"
            + " --password=--P for a password that starts with --)";

    private final ObjectMapper json = new ObjectMapper();
    private final PrintStream out;
    private final PrintStream err;

    private AdminCli(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    /** Runs one command; returns the exit status. {@code args} excludes the word "admin". */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        return new AdminCli(out, err).execute(args);
    }

    private int execute(String[] args) {
        String url = DEFAULT_URL;
        String user = null;
        String password = null;
        boolean raw = false;
        List<String> words = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            FlagValues.Inline inline = FlagValues.inline(args[i]);
            String a = inline == null ? args[i] : inline.name();
            switch (a) {
                case "--url", "--user", "--password", "--password-file" -> {
                    boolean secret = a.equals("--password");
                    String missing = inline != null ? FlagValues.missing(inline)
                            : FlagValues.missing(a, i + 1 < args.length ? args[i + 1] : null, secret);
                    if (missing != null) {
                        return usage(secret && inline == null && i + 1 < args.length && args[i + 1].startsWith("--")
                                ? missing + " (for a password that starts with --, write --password=VALUE or use --password-file)"
                                : missing);
                    }
                    String v = inline != null ? inline.value() : args[++i];
                    if (a.equals("--url")) {
                        String problem = urlProblem(v);
                        if (problem != null) {
                            return usage("--url '" + v + "' " + problem);
                        }
                        url = v.endsWith("/") ? v.substring(0, v.length() - 1) : v;
                    } else if (a.equals("--user")) {
                        user = v;
                    } else if (a.equals("--password")) {
                        password = v;
                    } else {
                        Path file;
                        try {
                            file = Path.of(v);
                        } catch (InvalidPathException e) {
                            return usage("--password-file '" + v + "' cannot be read: " + e.getMessage());
                        }
                        try {
                            password = Files.readAllLines(file, StandardCharsets.UTF_8).stream().findFirst().orElse("");
                        } catch (IOException e) {
                            return usage("--password-file '" + v + "' cannot be read: " + UnreadableFile.reason(file, e));
                        }
                        if (password.isEmpty()) {
                            // An empty password would be sent as one, and the broker's 401 says nothing of the file.
                            return usage("--password-file '" + v + "' holds no password: its first line is empty");
                        }
                    }
                }
                case "--json", "-h", "--help" -> {
                    if (inline != null) {
                        return usage(FlagValues.noValue(inline));
                    }
                    if (a.equals("--json")) {
                        raw = true;
                    } else {
                        out.println(USAGE);
                        return 0;
                    }
                }
                default -> {
                    if (args[i].startsWith("--")) {
                        return usage("unknown option '" + args[i] + "'");
                    }
                    words.add(args[i]);
                }
            }
        }
        if (words.isEmpty()) {
            return usage("no command given");
        }
        if (user != null && password == null) {
            Console console = System.console();
            if (console == null) {
                return usage("--user needs --password-file FILE, --password P, or a terminal to ask for the password on");
            }
            char[] typed = console.readPassword("password for %s: ", user);
            password = typed == null ? "" : new String(typed);
        }
        if (user == null && password != null) {
            return usage("a password needs --user");
        }
        String command = words.get(0);
        Request request;
        switch (command) {
            case "queues", "connections", "consumers", "producers", "cluster" -> {
                if (words.size() != 1) {
                    return usage(command + " takes no argument, got " + words.subList(1, words.size()));
                }
                request = new Request("GET", "/api/" + command, null);
            }
            case "close-connection" -> {
                if (words.size() != 2) {
                    return usage("close-connection takes one connection id (the CONNECTION column), got " + (words.size() - 1)
                            + " arguments");
                }
                if (words.get(1).isEmpty()) { // DELETE /api/connections/ names no connection
                    return usage("the connection id is empty; give one of the CONNECTION column");
                }
                request = new Request("DELETE", "/api/connections/" + encode(words.get(1)), null);
            }
            case "transfer-leader" -> {
                if (words.size() != 2 || !words.get(1).matches("[0-9]{1,9}")) {
                    return usage("transfer-leader takes one node id (a number of cluster.nodes), got " + words.subList(1, words.size()));
                }
                request = new Request("POST", "/api/cluster/leader", "{\"nodeId\": " + Integer.parseInt(words.get(1)) + "}");
            }
            case "feature-level" -> {
                if (words.size() != 2 || !words.get(1).matches("[0-9]{1,9}")) {
                    return usage("feature-level takes one entry level (a number), got " + words.subList(1, words.size()));
                }
                request = new Request("POST", "/api/cluster/feature-level", "{\"level\": " + Integer.parseInt(words.get(1)) + "}");
            }
            case "add-node" -> {
                // The API checks the ports' range; here only that each is a number, so that the JSON is well formed.
                if (words.size() < 5 || words.size() > 6 || !words.get(1).matches("[0-9]{1,9}")
                        || !words.subList(3, words.size()).stream().allMatch(w -> w.matches("[0-9]{1,9}"))) {
                    return usage("add-node takes ID HOST RAFT_PORT CLIENT_PORT [SNAPSHOT_PORT], numbers but the host, got "
                            + words.subList(1, words.size()));
                }
                ObjectNode node = json.createObjectNode().put("id", Integer.parseInt(words.get(1))).put("host", words.get(2))
                        .put("raftPort", Integer.parseInt(words.get(3))).put("clientPort", Integer.parseInt(words.get(4)));
                if (words.size() == 6) {
                    node.put("snapshotPort", Integer.parseInt(words.get(5)));
                }
                request = new Request("POST", "/api/cluster/nodes", node.toString());
            }
            case "remove-node" -> {
                if (words.size() != 2 || !words.get(1).matches("[0-9]{1,9}")) {
                    return usage("remove-node takes one node id (a member's number), got " + words.subList(1, words.size()));
                }
                request = new Request("DELETE", "/api/cluster/nodes/" + Integer.parseInt(words.get(1)), null);
            }
            case "queue", "delete", "purge" -> {
                if (words.size() != 2) {
                    return usage(command + " takes one queue name, got " + (words.size() - 1) + " arguments");
                }
                if (words.get(1).isEmpty()) { // /api/queues/ names the list, no queue
                    return usage("the queue name is empty");
                }
                String path = "/api/queues/" + encode(words.get(1));
                request = switch (command) {
                    case "queue" -> new Request("GET", path, null);
                    case "delete" -> new Request("DELETE", path, null);
                    default -> new Request("POST", path + "/purge", null);
                };
            }
            case "declare" -> {
                if (words.size() < 2) {
                    return usage("declare takes a queue name and optional key=value settings");
                }
                if (words.get(1).isEmpty()) {
                    return usage("the queue name is empty");
                }
                ObjectNode settings = json.createObjectNode();
                for (String kv : words.subList(2, words.size())) {
                    int eq = kv.indexOf('=');
                    if (eq <= 0) {
                        return usage("declare setting '" + kv + "' is not key=value");
                    }
                    String k = kv.substring(0, eq);
                    String v = kv.substring(eq + 1);
                    if (settings.has(k)) { // as the API refuses a body giving a key twice: the last would win without a word
                        return usage("declare setting '" + k + "' is given twice; give each key once");
                    }
                    if (STRING_SETTINGS.contains(k)) {
                        settings.put(k, v); // a queue named 123 is a name, not a number
                    } else if (v.matches("-?0[0-9]+")) { // as the API refuses it in a body, and the configuration file
                        return usage("declare setting " + AdminJson.leadingZero(k, v));
                    } else if (v.matches("-?[0-9]+")) {
                        try {
                            settings.put(k, Long.parseLong(v));
                        } catch (NumberFormatException tooLarge) {
                            return usage("declare setting '" + k + "' is " + v + ", beyond a whole number's range ("
                                    + Long.MIN_VALUE + ".." + Long.MAX_VALUE + ")");
                        }
                    } else if (v.equals("true") || v.equals("false")) {
                        settings.put(k, Boolean.parseBoolean(v));
                    } else {
                        settings.put(k, v);
                    }
                }
                request = new Request("PUT", "/api/queues/" + encode(words.get(1)), settings.toString());
            }
            default -> {
                return usage("unknown command '" + command + "'");
            }
        }
        return send(url, user, password, request, command, raw);
    }

    /** The settings whose value is text (QueueSettings): taken as written, whatever it looks like. */
    private static final Set<String> STRING_SETTINGS = Set.of(QueueSettings.DEAD_LETTER_QUEUE,
            QueueSettings.OVERFLOW_POLICY);

    private record Request(String method, String path, String body) {
    }

    /**
     * Why {@code url} cannot be the broker's admin URL, or null if it can: an http or https URL with a host (a path is
     * allowed, for a proxy in front). Checked while parsing, since the HTTP client throws on anything else, and the docs
     * promise usage and exit 2 for bad arguments, not a stack trace.
     */
    static String urlProblem(String url) {
        URI uri;
        try {
            uri = new URI(url);
        } catch (URISyntaxException e) {
            return "is not a valid URL: " + e.getMessage();
        }
        String example = " (like " + DEFAULT_URL + ")";
        if (uri.getScheme() == null || uri.isOpaque()) { // "localhost:7673" parses as the scheme "localhost"
            return "does not start with http:// or https://" + example;
        }
        if (!uri.getScheme().equalsIgnoreCase("http") && !uri.getScheme().equalsIgnoreCase("https")) {
            return "has the scheme '" + uri.getScheme() + "'; the admin port speaks http or https" + example;
        }
        if (uri.getHost() == null) {
            return uri.getRawAuthority() == null ? "names no host" + example : "has '" + uri.getRawAuthority()
                    + "' where the host goes, which is no host name (letters, digits, '-' and '.') or address" + example;
        }
        if (uri.getRawQuery() != null || uri.getRawFragment() != null) {
            return "has a query or fragment; give only the scheme, host, port and an optional path" + example;
        }
        return null;
    }

    private int send(String url, String user, String password, Request request, String command, boolean raw) {
        URI uri;
        try {
            uri = URI.create(url + request.path);
        } catch (IllegalArgumentException e) {
            return usage("--url '" + url + "' is not a valid URL: " + e.getMessage());
        }
        HttpResponse<String> response;
        try {
            // Built inside the try: the builder throws IllegalArgumentException for a URI it will not use, and urlProblem
            // may not foresee every such case; that is still bad usage, not a stack trace.
            HttpRequest.Builder b = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(30))
                    .method(request.method, request.body == null ? HttpRequest.BodyPublishers.noBody()
                            : HttpRequest.BodyPublishers.ofString(request.body));
            if (request.body != null) {
                b.header("Content-Type", "application/json");
            }
            if (user != null) {
                b.header("Authorization", "Basic " + Base64.getEncoder().encodeToString(
                        (user + ":" + password).getBytes(StandardCharsets.UTF_8)));
            }
            HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
            response = client.send(b.build(), HttpResponse.BodyHandlers.ofString());
        } catch (ConnectException | HttpConnectTimeoutException e) {
            err.println("sluice admin: the broker is unreachable at " + url + " (" + e.getClass().getSimpleName()
                    + "); is it running with metrics.enabled true, and is --url its metrics port?");
            return 1;
        } catch (IOException e) {
            err.println("sluice admin: request to " + uri + " failed: " + e);
            return 1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            err.println("sluice admin: interrupted");
            return 1;
        } catch (IllegalArgumentException e) {
            return usage("--url '" + url + "' is not a usable http URL: " + e.getMessage());
        }
        JsonNode body;
        try {
            body = json.readTree(response.body());
        } catch (IOException e) {
            err.println("sluice admin: " + uri + " answered " + response.statusCode() + " with something other than JSON;"
                    + " is --url the broker's metrics port?");
            return 1;
        }
        if (response.statusCode() / 100 != 2) {
            err.println("sluice admin: " + body.path("message").asText(response.body().trim()) + " (HTTP "
                    + response.statusCode() + ", " + body.path("error").asText("error") + ")");
            return 1;
        }
        if (raw) {
            out.println(body.toPrettyString());
            return 0;
        }
        switch (command) {
            case "queues" -> table(body, Column.of("NAME", "name"), Column.of("BACKLOG", "backlogMessages"),
                    Column.mebibytes("BACKLOG MiB", "backlogBytes"), Column.of("READY", "readyMessages"),
                    Column.of("UNACKED", "unackedMessages"), Column.rate("PUBLISHED/s", "publishedPerSecond"),
                    Column.rate("ACKED/s", "ackedPerSecond"), Column.seconds("OLDEST s", "oldestUnackedAgeSeconds"),
                    Column.of("CONSUMERS", "consumers"),
                    Column.of("PRODUCERS", "producers"), Column.of("FLOW", "flowState"), Column.of("REASON", "flowReason"));
            case "connections" -> table(body, Column.of("CONNECTION", "id"), Column.of("REMOTE", "remoteAddress"),
                    Column.of("CLIENT", "client"), Column.of("USER", "user"), Column.mebibytes("RECEIVED MiB", "bytesReceived"),
                    Column.mebibytes("SENT MiB", "bytesSent"));
            case "consumers" -> table(body, Column.of("QUEUE", "queue"), Column.of("CONNECTION", "connection"),
                    Column.of("TAG", "tag"), Column.of("CREDIT", "credit"), Column.of("UNACKED", "unackedMessages"));
            case "producers" -> table(body, Column.of("QUEUE", "queue"), Column.of("CONNECTION", "connection"),
                    Column.of("FLOW", "flowState"));
            case "close-connection" -> out.println("closed connection " + body.path("closed").asText());
            case "cluster" -> {
                body.fields().forEachRemaining(e -> {
                    if (e.getValue().isValueNode()) {
                        out.printf("%-17s %s%n", e.getKey(), e.getValue().asText());
                    } else if (e.getKey().equals("supportedEntryLevels")) { // node → the entry level its broker supports
                        out.printf("%-17s %s%n", e.getKey(), e.getValue());
                    }
                });
                if (body.path("members").size() > 0) {
                    out.println();
                    table(body.path("members"), Column.of("MEMBER", "nodeId"), Column.of("HOST", "host"), Column.of("RAFT PORT", "raftPort"),
                            Column.of("CLIENT PORT", "clientPort"), Column.of("SNAPSHOT PORT", "snapshotPort"));
                }
                if (body.path("followers").size() > 0) {
                    out.println();
                    table(body.path("followers"), Column.of("FOLLOWER", "nodeId"), Column.of("MATCH INDEX", "matchIndex"),
                            Column.of("NEXT INDEX", "nextIndex"), Column.of("LAG ENTRIES", "lagEntries"),
                            Column.of("LAST RESPONSE ms", "lastResponseMs"));
                }
            }
            case "transfer-leader" -> out.println("node " + body.path("leaderNodeId").asText() + " leads the shard now");
            case "feature-level" -> out.println("the cluster's entry level is " + body.path("entryLevel").asText());
            case "add-node", "remove-node" -> {
                List<String> ids = new ArrayList<>();
                body.path("members").forEach(m -> ids.add(m.path("nodeId").asText()));
                out.println((command.equals("add-node") ? "added node " + body.path("added").asText()
                        : "removed node " + body.path("removed").asText()) + "; the members are now " + String.join(", ", ids));
            }
            case "queue", "declare" -> {
                body.fields().forEachRemaining(e -> out.printf("%-16s %s%n", e.getKey(),
                        e.getValue().isValueNode() ? e.getValue().asText() : e.getValue().toString()));
            }
            case "delete" -> out.println("deleted queue '" + body.path("deleted").asText() + "'");
            case "purge" -> out.println("purged " + body.path("purgedMessages").asLong() + " messages from queue '"
                    + body.path("queue").asText() + "'");
            default -> out.println(body.toPrettyString());
        }
        return 0;
    }

    /** A table column: its header, in words and units, and how a row's field is shown. */
    private record Column(String header, String field, Function<JsonNode, String> format) {
        static Column of(String header, String field) {
            return new Column(header, field, v -> v.isNull() ? "" : v.asText(""));
        }

        /**
         * Messages per second over the broker's last sampling interval ({@code rates} of the queue), one
         * decimal; "-" until the broker has sampled the queue twice ({@code intervalMs} 0), which is
         * not the same as idle.
         */
        static Column rate(String header, String key) {
            return new Column(header, "rates", r -> r.path("intervalMs").asLong() <= 0 ? "-"
                    : String.format(Locale.ROOT, "%.1f", r.path(key).asDouble()));
        }

        /** Seconds with one decimal; "?" when the broker could not tell (null). */
        static Column seconds(String header, String field) {
            return new Column(header, field, v -> v.isNumber() ? String.format(Locale.ROOT, "%.1f", v.asDouble()) : "?");
        }

        /** Bytes shown in MiB with one decimal, so that a column of large counts can be read at a glance. */
        static Column mebibytes(String header, String field) {
            return new Column(header, field, v -> String.format(Locale.ROOT, "%.1f", v.asLong() / (1024.0 * 1024.0)));
        }
    }

    /** Prints the array's objects as a table with these columns. */
    private void table(JsonNode rows, Column... columns) {
        int[] widths = new int[columns.length];
        List<String[]> cells = new ArrayList<>();
        String[] header = new String[columns.length];
        for (int c = 0; c < columns.length; c++) {
            header[c] = columns[c].header();
        }
        cells.add(header);
        for (JsonNode row : rows) {
            String[] line = new String[columns.length];
            for (int c = 0; c < columns.length; c++) {
                line[c] = columns[c].format().apply(row.path(columns[c].field()));
            }
            cells.add(line);
        }
        for (String[] line : cells) {
            for (int c = 0; c < columns.length; c++) {
                widths[c] = Math.max(widths[c], line[c].length());
            }
        }
        for (String[] line : cells) {
            StringBuilder sb = new StringBuilder();
            for (int c = 0; c < columns.length; c++) {
                sb.append(c == 0 ? "" : "  ").append(String.format("%-" + widths[c] + "s", line[c]));
            }
            out.println(sb.toString().stripTrailing());
        }
        if (cells.size() == 1) {
            out.println("(none)");
        }
    }

    private int usage(String problem) {
        err.println("sluice admin: " + problem);
        err.println(USAGE);
        return 2;
    }

    private static String encode(String name) {
        return URLEncoder.encode(name, StandardCharsets.UTF_8).replace("+", "%20");
    }
}
