package io.sluice.broker.cluster;

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
 * <p>What it does not do: the answer (the snapshot) is neither encrypted nor authenticated, so someone who can
 * read or change the traffic between the nodes can read the messages or feed a follower a forged snapshot; TLS
 * on the snapshot port is not built (docs/replication.md, "Not built yet").
 *
 * <p>Threads: the server's thread issues and checks nonces ({@link #challenge}, {@link #verify}, synchronized);
 * a follower's installer thread computes proofs ({@link #authorization}), which touches no state.
 */
final class SnapshotAuth {
    static final String SCHEME = "Sluice-HMAC-SHA256";
    private static final long NONCE_TTL_NANOS = 30_000_000_000L;
    /** Nonces issued and not used yet, at most this many (the oldest is forgotten first): a flood of requests costs no memory. */
    private static final int MAX_NONCES = 256;
    private static final Pattern NONCE = Pattern.compile("nonce=\"([A-Za-z0-9_-]{16,128})\"");
    private static final Pattern PROOF = Pattern.compile("proof=\"([0-9a-f]{64})\"");

    /** The shared secret, or null when requests are not checked. */
    private final byte[] secret;
    private final SecureRandom random = new SecureRandom();
    /** Nonce to the time it was issued (System.nanoTime), oldest first. */
    private final Map<String, Long> issued = new LinkedHashMap<>();

    private SnapshotAuth(byte[] secret) {
        this.secret = secret;
    }

    static SnapshotAuth none() {
        return new SnapshotAuth(null);
    }

    static SnapshotAuth withSecret(byte[] secret) {
        if (secret == null || secret.length == 0) {
            throw new IllegalArgumentException("an empty cluster secret");
        }
        return new SnapshotAuth(secret.clone());
    }

    boolean required() {
        return secret != null;
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
        if (secret == null) {
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
        return MessageDigest.isEqual(proof(nonce.group(1), requestLine).getBytes(StandardCharsets.US_ASCII),
                proof.group(1).getBytes(StandardCharsets.US_ASCII));
    }

    /**
     * The {@code Authorization} header answering the challenge {@code wwwAuthenticate} for {@code requestLine},
     * or null if the challenge is not this scheme's (or this node has no secret).
     */
    String authorization(String wwwAuthenticate, String requestLine) {
        if (secret == null || wwwAuthenticate == null || !wwwAuthenticate.startsWith(SCHEME + " ")) {
            return null;
        }
        Matcher nonce = NONCE.matcher(wwwAuthenticate);
        if (!nonce.find()) {
            return null;
        }
        return SCHEME + " nonce=\"" + nonce.group(1) + "\", proof=\"" + proof(nonce.group(1), requestLine) + "\"";
    }

    private String proof(String nonce, String requestLine) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(secret, "HmacSHA256"));
            return HexFormat.of().formatHex(mac.doFinal(("sluice-snapshot\n" + nonce + "\n" + requestLine).getBytes(StandardCharsets.UTF_8)));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HMAC-SHA256 is missing from this JVM", e);
        }
    }
}
