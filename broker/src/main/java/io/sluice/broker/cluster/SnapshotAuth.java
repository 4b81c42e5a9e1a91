package io.sluice.broker.cluster;

import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.config.ClusterSecretFile;
import io.sluice.broker.config.ClusterSecretFile.ClusterSecrets;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Who may fetch a snapshot (docs/security.md, "The snapshot port"): a node that proves it holds the cluster
 * secret ({@code cluster.secret-file}) without sending it. A request without proof is answered 401 with a
 * challenge, a fresh random nonce; the follower asks again with {@code HMAC-SHA256(secret, "sluice-snapshot\n"
 * + nonce + "\n" + request line)}. A nonce serves once and for {@link #NONCE_TTL_NANOS} at most, and the proof
 * is bound to the request line, so a proof overheard on the network answers no other request. With
 * {@code cluster.snapshot-auth: none} ({@link #none()}) every request is served.
 *
 * <p>Rotation ({@link #fromFile}): the secret file is read again at every use, a secret per line; a node proves
 * the first line and accepts a proof of any line, so an operator adds the new secret to every node's file,
 * then puts it first on each, then removes the old one, without a restart. A file that became unusable
 * (unreadable, a line too short, readable by others) is not taken: the last good secrets stay, with a WARN.
 *
 * <p>What it does not do: the answer (the snapshot) is neither encrypted nor authenticated, so someone who can
 * read or change the traffic between the nodes can read the messages or feed a follower a forged snapshot; TLS
 * on the snapshot port is not built (docs/replication.md, "Not built yet").
 *
 * <p>Threads: the server's thread issues and checks nonces ({@link #challenge}, {@link #verify}, synchronized);
 * a follower's installer thread computes proofs ({@link #authorization}); both read the secrets through
 * {@link #secrets()}, synchronized (the last good secrets read from the file).
 */
final class SnapshotAuth {
    private static final Logger LOG = LoggerFactory.getLogger(SnapshotAuth.class);
    static final String SCHEME = "Sluice-HMAC-SHA256";
    private static final long NONCE_TTL_NANOS = 30_000_000_000L;
    /** Nonces issued and not used yet, at most this many (the oldest is forgotten first): a flood of requests costs no memory. */
    private static final int MAX_NONCES = 256;
    private static final Pattern NONCE = Pattern.compile("nonce=\"([A-Za-z0-9_-]{16,128})\"");
    private static final Pattern PROOF = Pattern.compile("proof=\"([0-9a-f]{64})\"");

    /** The secret file read at every use, or null for fixed secrets ({@link #withSecret}) or none. */
    private final String secretFile;
    /** The secrets last read (or given), or null when requests are not checked; guarded by {@code this}. */
    private ClusterSecrets secrets;
    /** The last problem of the secret file that was logged, so that it is logged once; guarded by {@code this}. */
    private String loggedProblem;
    private final SecureRandom random = new SecureRandom();
    /** Nonce to the time it was issued (System.nanoTime), oldest first. */
    private final Map<String, Long> issued = new LinkedHashMap<>();

    private SnapshotAuth(String secretFile, ClusterSecrets secrets) {
        this.secretFile = secretFile;
        this.secrets = secrets;
    }

    static SnapshotAuth none() {
        return new SnapshotAuth(null, null);
    }

    /** A single secret that never changes (tests). */
    static SnapshotAuth withSecret(byte[] secret) {
        if (secret == null || secret.length == 0) {
            throw new IllegalArgumentException("an empty cluster secret");
        }
        return new SnapshotAuth(null, new ClusterSecrets(secret.clone(), List.of(secret.clone())));
    }

    /**
     * The secrets of {@code cluster.secret-file}, read again at every use (rotation, above).
     *
     * @throws IllegalArgumentException if the file is not usable now (the configuration check's sentence)
     */
    static SnapshotAuth fromFile(String path) {
        return new SnapshotAuth(path, ClusterSecretFile.load(path));
    }

    /** {@code cluster.snapshot-auth} of {@code config}; the configuration check made sure that {@code secret} comes with a good secret file. */
    static SnapshotAuth forConfig(BrokerConfig config) {
        if ("none".equals(config.cluster.snapshotAuth)) {
            LOG.warn("SECURITY: cluster.snapshot-auth is none: anyone who reaches snapshot-port {} can download every queue's "
                    + "messages. Set cluster.snapshot-auth: secret and cluster.secret-file unless only the nodes reach it.",
                    config.cluster.nodes.stream().filter(n -> n.id == config.cluster.nodeId).findFirst().map(n -> n.snapshotPort).orElse(0));
            return none();
        }
        return fromFile(config.cluster.secretFile);
    }

    synchronized boolean required() {
        return secrets != null;
    }

    /** The secrets now: read again from the file, or the last good ones if it is not usable (logged once per problem). */
    private synchronized ClusterSecrets secrets() {
        if (secretFile != null) {
            try {
                secrets = ClusterSecretFile.load(secretFile);
                loggedProblem = null;
            } catch (RuntimeException e) {
                if (!e.getMessage().equals(loggedProblem)) {
                    loggedProblem = e.getMessage();
                    LOG.warn("The cluster secret file cannot be used now ({}); this node keeps the secrets it read last.", loggedProblem);
                }
            }
        }
        return secrets;
    }

    /** A fresh nonce for a {@code WWW-Authenticate} header: {@code Sluice-HMAC-SHA256 nonce="..."}. */
    synchronized String challenge() {
        byte[] bytes = new byte[32];
        random.nextBytes(bytes);
        String nonce = Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
        if (issued.size() >= MAX_NONCES) {
            Iterator<String> oldest = issued.keySet().iterator();
            oldest.next();
            oldest.remove();
        }
        issued.put(nonce, System.nanoTime());
        return SCHEME + " nonce=\"" + nonce + "\"";
    }

    /**
     * True if {@code authorization} (an {@code Authorization} header, or null) proves the secret for
     * {@code requestLine} with a nonce this server issued, unused and not expired; the nonce is spent either way.
     */
    synchronized boolean verify(String authorization, String requestLine) {
        ClusterSecrets now = secrets();
        if (now == null) {
            return true;
        }
        if (authorization == null || !authorization.startsWith(SCHEME + " ")) {
            return false;
        }
        Matcher nonce = NONCE.matcher(authorization);
        Matcher proof = PROOF.matcher(authorization);
        if (!nonce.find() || !proof.find()) {
            return false;
        }
        Long issuedAt = issued.remove(nonce.group(1));
        if (issuedAt == null || System.nanoTime() - issuedAt > NONCE_TTL_NANOS) {
            return false;
        }
        byte[] offered = proof.group(1).getBytes(StandardCharsets.US_ASCII);
        boolean proven = false;
        for (byte[] secret : now.accepted()) { // every one checked, whichever matches: no timing tells which
            proven |= MessageDigest.isEqual(proof(secret, nonce.group(1), requestLine).getBytes(StandardCharsets.US_ASCII), offered);
        }
        return proven;
    }

    /**
     * The {@code Authorization} header answering the challenge {@code wwwAuthenticate} for {@code requestLine},
     * or null if the challenge is not this scheme's (or this node has no secret).
     */
    String authorization(String wwwAuthenticate, String requestLine) {
        ClusterSecrets now = secrets();
        if (now == null || wwwAuthenticate == null || !wwwAuthenticate.startsWith(SCHEME + " ")) {
            return null;
        }
        Matcher nonce = NONCE.matcher(wwwAuthenticate);
        if (!nonce.find()) {
            return null;
        }
        return SCHEME + " nonce=\"" + nonce.group(1) + "\", proof=\"" + proof(now.proving(), nonce.group(1), requestLine) + "\"";
    }

    private static String proof(byte[] secret, String nonce, String requestLine) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(secret, "HmacSHA256"));
            return HexFormat.of().formatHex(mac.doFinal(("sluice-snapshot\n" + nonce + "\n" + requestLine).getBytes(StandardCharsets.UTF_8)));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HMAC-SHA256 is missing from this JVM", e);
        }
    }
}
