package io.sluice.broker;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A network namespace per cluster node, for partition tests (docs/replication.md, "Tests"): each namespace has one
 * end of a veth pair with the node's address {@code 10.77.S.N/24}, the other end on a bridge in this (the root)
 * namespace, which holds {@code 10.77.S.254}; so this JVM (the clients, the admin calls) reaches every node, and the
 * nodes reach each other through the bridge. A partition is a blackhole route inside a node's namespace: its packets
 * to the peers named are dropped (a connect fails at once), while the bridge's address, this JVM's, stays reachable.
 * Undoing the route heals it.
 *
 * <p>Needs root and iproute2 with network namespaces: {@link #unavailableReason()} says why not, for a test to skip.
 * Names carry this JVM's pid ({@code slp<pid>...}), so runs never share a namespace, and those of a run whose JVM is
 * gone (killed before its clean-up) are removed by the next run. Not thread-safe: the test's thread owns it.
 */
final class NodeNetwork implements AutoCloseable {
    private static final String PREFIX = "slp";
    private final long pid = ProcessHandle.current().pid();
    private final int size;
    private final int subnet;
    private final String bridge;
    private final List<String> namespaces = new ArrayList<>();
    /** The veth ends on the bridge, one per node. */
    private final List<String> links = new ArrayList<>();
    private boolean bridgeCreated;

    private NodeNetwork(int size) throws IOException {
        this.size = size;
        this.bridge = PREFIX + "b" + pid;
        this.subnet = freeSubnet();
    }

    /** Why this machine cannot run partition tests (not root, no {@code ip}, namespaces refused), or null if it can. */
    static String unavailableReason() {
        if (!"root".equals(System.getProperty("user.name"))) {
            return "partition tests need root (network namespaces, veth pairs, a bridge); running as " + System.getProperty("user.name");
        }
        String probe = PREFIX + "probe" + ProcessHandle.current().pid();
        try {
            Result added = run("ip", "netns", "add", probe);
            if (added.code != 0) {
                return "'ip netns add' failed (exit " + added.code + "): " + added.output.strip();
            }
            Result deleted = run("ip", "netns", "del", probe);
            return deleted.code == 0 ? null : "'ip netns del' failed (exit " + deleted.code + "): " + deleted.output.strip();
        } catch (IOException e) {
            return "cannot run 'ip' (iproute2 is needed): " + e.getMessage();
        }
    }

    /**
     * Removes what earlier runs whose JVM is gone left behind, then builds the bridge and one namespace per node. A
     * failure half-way removes what was built.
     */
    static NodeNetwork create(int size) throws IOException {
        removeStale();
        NodeNetwork network = new NodeNetwork(size);
        try {
            network.build();
        } catch (IOException | RuntimeException e) {
            network.close();
            throw e;
        }
        return network;
    }

    private void build() throws IOException {
        must("ip", "link", "add", bridge, "type", "bridge");
        bridgeCreated = true;
        must("ip", "addr", "add", "10.77." + subnet + ".254/24", "dev", bridge);
        must("ip", "link", "set", bridge, "up");
        for (int node = 0; node < size; node++) {
            String namespace = namespace(node);
            String outside = PREFIX + "h" + pid + "n" + (node + 1);
            String inside = PREFIX + "v" + pid + "n" + (node + 1);
            must("ip", "netns", "add", namespace);
            namespaces.add(namespace);
            must("ip", "link", "add", outside, "type", "veth", "peer", "name", inside);
            links.add(outside);
            must("ip", "link", "set", inside, "netns", namespace);
            must("ip", "link", "set", outside, "master", bridge);
            must("ip", "link", "set", outside, "up");
            must("ip", "netns", "exec", namespace, "ip", "addr", "add", host(node) + "/24", "dev", inside);
            must("ip", "netns", "exec", namespace, "ip", "link", "set", inside, "up");
            must("ip", "netns", "exec", namespace, "ip", "link", "set", "lo", "up");
        }
    }

    /** Node {@code node}'s (0-based) address, which it listens on and the others and the clients reach it at. */
    String host(int node) {
        return "10.77." + subnet + "." + (node + 1);
    }

    String[] hosts() {
        String[] hosts = new String[size];
        for (int i = 0; i < size; i++) {
            hosts[i] = host(i);
        }
        return hosts;
    }

    /** What to put before a command to run it in node {@code node}'s namespace. */
    List<String> commandPrefix(int node) {
        return List.of("ip", "netns", "exec", namespace(node));
    }

    /** Cuts node {@code node} off from {@code peers} (both ways: its packets to them are dropped, so are its answers). */
    void cut(int node, int... peers) throws IOException {
        for (int peer : peers) {
            must("ip", "netns", "exec", namespace(node), "ip", "route", "add", "blackhole", host(peer) + "/32");
        }
    }

    /** Undoes {@link #cut}. */
    void heal(int node, int... peers) throws IOException {
        for (int peer : peers) {
            must("ip", "netns", "exec", namespace(node), "ip", "route", "del", "blackhole", host(peer) + "/32");
        }
    }

    private String namespace(int node) {
        return PREFIX + pid + "n" + (node + 1);
    }

    /**
     * Deletes each veth pair (both ends at once: deleting a namespace would delete the end in it, and then the other,
     * but only some time after, so that the next test's pair of the same name could still exist), the namespaces and
     * the bridge.
     */
    @Override
    public void close() throws IOException {
        List<String> failures = new ArrayList<>();
        for (String link : links) {
            Result result = run("ip", "link", "del", link);
            if (result.code != 0) {
                failures.add(link + ": " + result.output.strip());
            }
        }
        links.clear();
        for (String namespace : namespaces) {
            Result result = run("ip", "netns", "del", namespace);
            if (result.code != 0) {
                failures.add(namespace + ": " + result.output.strip());
            }
        }
        namespaces.clear();
        if (bridgeCreated) {
            Result result = run("ip", "link", "del", bridge);
            if (result.code != 0) {
                failures.add(bridge + ": " + result.output.strip());
            }
            bridgeCreated = false;
        }
        if (!failures.isEmpty()) {
            throw new IOException("removing the test network left " + failures);
        }
    }

    /** Namespaces and bridges of this prefix whose pid is not a live process: a run killed before its clean-up. */
    private static void removeStale() throws IOException {
        for (String line : run("ip", "netns", "list").output.split("\n")) {
            String name = line.split(" ")[0];
            if (name.startsWith(PREFIX) && name.contains("n") && isStale(name.substring(PREFIX.length(), name.lastIndexOf('n')))) {
                run("ip", "netns", "del", name);
            }
        }
        for (String line : run("ip", "-o", "link", "show", "type", "bridge").output.split("\n")) {
            String[] fields = line.split(": ");
            if (fields.length > 1 && fields[1].startsWith(PREFIX + "b") && isStale(fields[1].substring(PREFIX.length() + 1))) {
                run("ip", "link", "del", fields[1]);
            }
        }
    }

    private static boolean isStale(String pid) {
        try {
            return ProcessHandle.of(Long.parseLong(pid)).isEmpty();
        } catch (NumberFormatException e) {
            return false; // not one of ours
        }
    }

    /** A third octet no route of this machine uses yet (another live run's bridge, or anything else on 10.77). */
    private int freeSubnet() throws IOException {
        String routes = run("ip", "-4", "route", "show").output;
        for (int i = 0; i < 200; i++) {
            int candidate = 20 + (int) ((pid + i) % 200);
            if (!routes.contains("10.77." + candidate + ".")) {
                return candidate;
            }
        }
        throw new IOException("no free 10.77.x.0/24 subnet for the test network: " + routes);
    }

    private record Result(int code, String output) {
    }

    private static void must(String... command) throws IOException {
        Result result = run(command);
        if (result.code != 0) {
            throw new IOException("'" + String.join(" ", command) + "' failed (exit " + result.code + "): " + result.output.strip());
        }
    }

    private static Result run(String... command) throws IOException {
        Path output = Files.createTempFile("sluice-ip", ".out");
        try {
            Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(output.toFile()).start();
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new IOException("'" + String.join(" ", command) + "' did not finish within 30 s");
            }
            return new Result(process.exitValue(), Files.readString(output, StandardCharsets.UTF_8));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted running '" + String.join(" ", command) + "'", e);
        } finally {
            Files.deleteIfExists(output);
        }
    }
}
