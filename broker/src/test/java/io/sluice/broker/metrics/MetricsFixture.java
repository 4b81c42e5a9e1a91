package io.sluice.broker.metrics;

import io.sluice.broker.Broker;
import io.sluice.broker.config.ConfigLoader;
import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Message;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.client.ReconnectPolicy;
import io.sluice.protocol.QueueSettings;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Predicate;

/**
 * A broker on free ports with its metrics endpoint, plus helpers: publish N, consume and ack M,
 * scrape and parse the Prometheus text. Shared by the metrics, admin and Prometheus tests.
 */
public final class MetricsFixture implements AutoCloseable {
    public final Broker broker;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    public MetricsFixture(Path dataDir, Map<String, String> extra) {
        this(dataDir, null, extra);
    }

    /** With a configuration file (YAML) under the overrides, e.g. for users. */
    public MetricsFixture(Path dataDir, Path configFile, Map<String, String> extra) {
        Map<String, String> overrides = new HashMap<>(Map.of(
                "broker.data-dir", dataDir.toString(),
                "broker.port", "0",
                "metrics.port", "0",
                "storage.reserved-disk-bytes", "67108864"));
        overrides.putAll(extra);
        broker = Broker.start(new ConfigLoader().load(configFile, overrides));
    }

    public String baseUrl() {
        return "http://127.0.0.1:" + broker.metricsPort();
    }

    public Connection connect() {
        return connect("", "");
    }

    /** A client connection as {@code user} ("" for anonymous). */
    public Connection connect(String user, String password) {
        return Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                .credentials(user, password).reconnectPolicy(ReconnectPolicy.DISABLED).build());
    }

    /** An HTTP Basic {@code Authorization} header value. */
    public static String basic(String user, String password) {
        return "Basic " + Base64.getEncoder().encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
    }

    /** A request to the metrics port on 127.0.0.1; {@code body} and {@code authorization} may be null. */
    public HttpResponse<String> request(String method, String path, String body, String authorization)
            throws IOException, InterruptedException {
        return request("127.0.0.1", method, path, body, authorization);
    }

    /** As {@link #request(String, String, String, String)}, to the metrics port on {@code host} (127.0.0.2 is another source). */
    public HttpResponse<String> request(String host, String method, String path, String body, String authorization)
            throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://" + host + ":" + broker.metricsPort() + path))
                .timeout(Duration.ofSeconds(30))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        if (authorization != null) {
            b.header("Authorization", authorization);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** Declares {@code queue}, publishes {@code published} confirmed messages, then consumes and acks {@code acked}. */
    public void publishAndAck(String queue, int published, int acked) throws Exception {
        try (Connection c = connect()) {
            c.declareQueue(queue, QueueSettings.EMPTY);
            try (Producer p = c.createProducer(queue, ProducerOptions.DEFAULT)) {
                for (int i = 0; i < published; i++) {
                    p.send(("message " + i).getBytes(StandardCharsets.UTF_8));
                }
            }
            if (acked > 0) {
                try (Consumer consumer = c.subscribe(queue, ConsumerOptions.DEFAULT.withCredit(acked))) {
                    for (int i = 0; i < acked; i++) {
                        Message m = consumer.receive(Duration.ofSeconds(10));
                        if (m == null) {
                            throw new AssertionError("message " + i + " of " + acked + " was not delivered");
                        }
                        m.ack();
                    }
                    String ackedName = MetricNames.QUEUE_ACKED + "{queue=\"" + queue + "\"}";
                    awaitScrape("acked_total of " + queue + " = " + acked, s -> s.getOrDefault(ackedName, -1.0) == acked);
                }
            }
        }
    }

    public HttpResponse<String> get(String path) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(URI.create(baseUrl() + path)).timeout(Duration.ofSeconds(30)).GET().build(),
                HttpResponse.BodyHandlers.ofString());
    }

    public String scrapeText() throws IOException, InterruptedException {
        HttpResponse<String> r = get("/metrics");
        if (r.statusCode() != 200) {
            throw new AssertionError("/metrics answered " + r.statusCode() + ": " + r.body());
        }
        return r.body();
    }

    /** Polls the endpoint until the parsed samples satisfy the condition (deadline 20 s). */
    public Map<String, Double> awaitScrape(String what, Predicate<Map<String, Double>> condition) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (true) {
            Map<String, Double> samples = parse(scrapeText());
            if (condition.test(samples)) {
                return samples;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(20);
        }
    }

    /** Sample name with its label set as written ({@code name{a="b"}}) to value; comments skipped. */
    public static Map<String, Double> parse(String text) {
        Map<String, Double> samples = new LinkedHashMap<>();
        for (String line : text.split("\n")) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            int space = line.lastIndexOf(' ');
            String value = line.substring(space + 1);
            samples.put(line.substring(0, space), switch (value) {
                case "NaN" -> Double.NaN;
                case "+Inf" -> Double.POSITIVE_INFINITY;
                case "-Inf" -> Double.NEGATIVE_INFINITY;
                default -> Double.parseDouble(value);
            });
        }
        return samples;
    }

    /** The metric name of a sample key (before any label set). */
    public static String nameOf(String sample) {
        int brace = sample.indexOf('{');
        return brace < 0 ? sample : sample.substring(0, brace);
    }

    @Override
    public void close() {
        broker.close();
    }
}
