package io.sluice.broker.security;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Certificates made in the test with the JDK's {@code keytool}: a CA, leaf certificates it signs (with
 * SANs, validity and start date chosen by the test), exported as PEM; private keys are written as
 * PKCS#8 PEM from the PKCS12 store in plain Java (no openssl needed), as {@link ClusterCertificates} does for
 * operators; this one also makes expired, misnamed and client certificates, and several CAs in one directory.
 */
public final class TestCertificates {
    private static final String PASSWORD = "changeit";
    private final Path dir;

    public TestCertificates(Path dir) {
        this.dir = dir;
    }

    private void keytool(String... args) throws IOException {
        ClusterCertificates.keytool(dir, args);
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
        Path out = dir.resolve(name + "-key.pem");
        ClusterCertificates.privateKeyPem(dir.resolve(name + ".p12"), name, PASSWORD, out);
        return out;
    }
}
