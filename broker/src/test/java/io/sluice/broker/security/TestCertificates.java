package io.sluice.broker.security;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.Key;
import java.security.KeyStore;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Certificates made in the test with the JDK's {@code keytool}: a CA, leaf certificates it signs (with
 * SANs, validity and start date chosen by the test), exported as PEM; private keys are written as
 * PKCS#8 PEM from the PKCS12 store in plain Java (no openssl needed).
 */
public final class TestCertificates {
    private static final String PASSWORD = "changeit";
    private final Path dir;

    public TestCertificates(Path dir) {
        this.dir = dir;
    }

    private void keytool(String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IllegalStateException("keytool " + command + " failed: " + output);
        }
    }

    private void genkey(String name, String dname, String... extra) throws Exception {
        List<String> args = new ArrayList<>(List.of("-genkeypair", "-alias", name, "-keyalg", "EC", "-groupname", "secp256r1",
                "-dname", dname, "-validity", "30", "-keystore", name + ".p12", "-storetype", "PKCS12",
                "-storepass", PASSWORD, "-keypass", PASSWORD));
        args.addAll(List.of(extra));
        keytool(args.toArray(String[]::new));
    }

    /** A self-signed CA; returns its PEM certificate. */
    public Path ca(String name) throws Exception {
        genkey(name, "CN=" + name, "-ext", "bc:c");
        keytool("-exportcert", "-rfc", "-alias", name, "-keystore", name + ".p12", "-storepass", PASSWORD, "-file", name + ".pem");
        return dir.resolve(name + ".pem");
    }

    /**
     * A leaf signed by {@code ca}; {@code startDate} like "-10d" or null; returns {chain PEM, key PEM}.
     */
    public Path[] leaf(String ca, String name, String cn, String san, int validityDays, String startDate) throws Exception {
        genkey(name, "CN=" + cn);
        keytool("-certreq", "-alias", name, "-keystore", name + ".p12", "-storepass", PASSWORD, "-file", name + ".csr");
        List<String> args = new ArrayList<>(List.of("-gencert", "-rfc", "-alias", ca, "-keystore", ca + ".p12", "-storepass", PASSWORD,
                "-infile", name + ".csr", "-outfile", name + ".crt", "-validity", String.valueOf(validityDays)));
        if (san != null) {
            args.addAll(List.of("-ext", "SAN=" + san));
        }
        if (startDate != null) {
            args.add("-startdate");
            args.add(startDate);
        }
        keytool(args.toArray(String[]::new));
        Path chain = dir.resolve(name + "-chain.pem");
        Files.writeString(chain, Files.readString(dir.resolve(name + ".crt")) + Files.readString(dir.resolve(ca + ".pem")));
        return new Path[] {chain, privateKeyPem(name)};
    }

    private Path privateKeyPem(String name) throws Exception {
        KeyStore store = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(dir.resolve(name + ".p12"))) {
            store.load(in, PASSWORD.toCharArray());
        }
        Key key = store.getKey(name, PASSWORD.toCharArray());
        String body = Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(key.getEncoded());
        Path out = dir.resolve(name + "-key.pem");
        Files.writeString(out, "-----BEGIN PRIVATE KEY-----\n" + body + "\n-----END PRIVATE KEY-----\n");
        return out;
    }
}
