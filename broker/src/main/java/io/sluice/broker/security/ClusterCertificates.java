package io.sluice.broker.security;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.Key;
import java.security.KeyStore;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Makes the certificates of a cluster's mutual TLS ({@code cluster.tls}, docs/security.md "Between the nodes"):
 * a CA for the cluster alone and, per node, a certificate it signs naming the node's hosts, with the JDK's own
 * {@code keytool} (no openssl needed). Everything goes in one directory:
 * <ul>
 *   <li>{@code ca.pem}: the CA's certificate, every node's {@code cluster.tls.ca};</li>
 *   <li>{@code ca.p12} and {@code ca.password}: the CA's key store and its random password (mode 600), kept to
 *       sign the certificate of a node added later;</li>
 *   <li>{@code NAME.pem} (the node's certificate and the CA's: its chain) and {@code NAME.key} (its private key,
 *       PKCS#8 PEM, unencrypted, mode 600): the node's {@code cluster.tls.certificate} and {@code private-key}.</li>
 * </ul>
 * Keys are EC P-256. Not thread-safe: one command at a time per directory.
 */
public final class ClusterCertificates {
    /** The CA's alias and file stem. */
    public static final String CA = "ca";
    private final Path dir;

    public ClusterCertificates(Path dir) {
        this.dir = dir;
    }

    /** Makes the CA, valid {@code validityDays} days, unless the directory has one; returns its certificate. */
    public Path ca(int validityDays) throws IOException {
        Path pem = dir.resolve(CA + ".pem");
        if (Files.exists(dir.resolve(CA + ".p12"))) {
            return pem;
        }
        Files.createDirectories(dir);
        String password = newPassword();
        writePrivate(dir.resolve(CA + ".password"), password + "\n");
        genkey(CA, "CN=Sluice cluster CA", password, validityDays, "-ext", "bc:c");
        keytool("-exportcert", "-rfc", "-alias", CA, "-keystore", CA + ".p12", "-storepass", password, "-file", CA + ".pem");
        return pem;
    }

    /**
     * Makes node {@code name}'s key and a certificate the CA signs for {@code hosts} (IP addresses or DNS names,
     * each a subject alternative name), valid {@code validityDays} days from {@code startDate} (keytool's form,
     * e.g. "-10d"; null: now); returns {chain PEM, private key PEM}.
     */
    public Path[] node(String name, List<String> hosts, int validityDays, String startDate) throws IOException {
        if (!name.matches("[A-Za-z0-9][A-Za-z0-9._-]{0,63}") || name.equals(CA)) {
            throw new IllegalArgumentException("a node's name is letters, digits, '.', '_' and '-' (and not '" + CA + "'), got '" + name + "'");
        }
        if (hosts.isEmpty()) {
            throw new IllegalArgumentException("a node's certificate names at least one host (the cluster.nodes[].host others dial)");
        }
        if (!Files.exists(dir.resolve(CA + ".p12"))) {
            throw new IllegalArgumentException("no CA in " + dir + ": make it first (sluice certs ca " + dir + ")");
        }
        String caPassword = Files.readString(dir.resolve(CA + ".password"), StandardCharsets.UTF_8).strip();
        String password = newPassword();
        Path store = dir.resolve(name + ".p12");
        Files.deleteIfExists(store);
        genkey(name, "CN=" + hosts.get(0), password, validityDays);
        keytool("-certreq", "-alias", name, "-keystore", name + ".p12", "-storepass", password, "-file", name + ".csr");
        List<String> args = new ArrayList<>(List.of("-gencert", "-rfc", "-alias", CA, "-keystore", CA + ".p12", "-storepass", caPassword,
                "-infile", name + ".csr", "-outfile", name + ".crt", "-validity", String.valueOf(validityDays),
                "-ext", "SAN=" + subjectAlternativeNames(hosts)));
        if (startDate != null) {
            args.add("-startdate");
            args.add(startDate);
        }
        keytool(args.toArray(String[]::new));
        Path chain = dir.resolve(name + ".pem");
        Files.writeString(chain, Files.readString(dir.resolve(name + ".crt")) + Files.readString(dir.resolve(CA + ".pem")));
        Path key = privateKeyPem(name, password);
        Files.delete(dir.resolve(name + ".csr"));
        Files.delete(dir.resolve(name + ".crt"));
        Files.delete(store); // the key is in NAME.key; the store's password is not kept
        return new Path[] {chain, key};
    }

    /** keytool's SAN extension value: {@code IP:} for an address, {@code DNS:} for a name. */
    static String subjectAlternativeNames(List<String> hosts) {
        List<String> names = new ArrayList<>();
        for (String host : hosts) {
            boolean ip = host.matches("[0-9.]+") || host.contains(":");
            names.add((ip ? "IP:" : "DNS:") + host);
        }
        return String.join(",", names);
    }

    private void genkey(String alias, String dname, String password, int validityDays, String... extra) throws IOException {
        List<String> args = new ArrayList<>(List.of("-genkeypair", "-alias", alias, "-keyalg", "EC", "-groupname", "secp256r1",
                "-dname", dname, "-validity", String.valueOf(validityDays), "-keystore", alias + ".p12", "-storetype", "PKCS12",
                "-storepass", password, "-keypass", password));
        args.addAll(List.of(extra));
        keytool(args.toArray(String[]::new));
        setPrivate(dir.resolve(alias + ".p12"));
    }

    private void keytool(String... args) throws IOException {
        keytool(dir, args);
    }

    /** Runs the JDK's keytool in {@code dir}; fails with its output. */
    static void keytool(Path dir, String... args) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
        try {
            String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
                p.destroyForcibly();
                throw new IOException("keytool " + args[0] + " failed: " + output.strip());
            }
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while keytool ran", e);
        }
    }

    private Path privateKeyPem(String alias, String password) throws IOException {
        Path out = dir.resolve(alias + ".key");
        privateKeyPem(dir.resolve(alias + ".p12"), alias, password, out);
        return out;
    }

    /** Writes the key of {@code alias} in the PKCS12 {@code store} to {@code out} as PKCS#8 PEM (mode 600), the form TLS keys take here. */
    static void privateKeyPem(Path store, String alias, String password, Path out) throws IOException {
        Key key;
        try (InputStream in = Files.newInputStream(store)) {
            KeyStore keys = KeyStore.getInstance("PKCS12");
            keys.load(in, password.toCharArray());
            key = keys.getKey(alias, password.toCharArray());
        } catch (GeneralSecurityException e) {
            throw new IOException("reading the key keytool made for " + alias + " failed", e);
        }
        String body = Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(key.getEncoded());
        writePrivate(out, "-----BEGIN PRIVATE KEY-----\n" + body + "\n-----END PRIVATE KEY-----\n");
    }

    private static String newPassword() {
        byte[] bytes = new byte[24];
        new SecureRandom().nextBytes(bytes);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    }

    /** Writes {@code content} to {@code file} readable by its owner alone from the start. */
    private static void writePrivate(Path file, String content) throws IOException {
        Files.deleteIfExists(file);
        Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        Files.writeString(file, content, StandardCharsets.UTF_8);
    }

    private static void setPrivate(Path file) {
        try {
            Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
