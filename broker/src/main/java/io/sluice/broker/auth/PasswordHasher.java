package io.sluice.broker.auth;

import javax.crypto.SecretKeyFactory;
import javax.crypto.spec.PBEKeySpec;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;

/**
 * Salted, slow password hashes (PBKDF2 with HMAC-SHA256 from the JDK), in the form
 * {@code pbkdf2-sha256:<iterations>:<salt base64>:<hash base64>}. Verification compares in constant time.
 */
public final class PasswordHasher {
    public static final String PREFIX = "pbkdf2-sha256";
    public static final int DEFAULT_ITERATIONS = 210_000;
    private static final int SALT_BYTES = 16;
    private static final int HASH_BITS = 256;
    private static final SecureRandom RANDOM = new SecureRandom();

    private PasswordHasher() {
    }

    public static String hash(char[] password) {
        byte[] salt = new byte[SALT_BYTES];
        RANDOM.nextBytes(salt);
        byte[] hash = pbkdf2(password, salt, DEFAULT_ITERATIONS);
        Base64.Encoder b64 = Base64.getEncoder();
        return PREFIX + ":" + DEFAULT_ITERATIONS + ":" + b64.encodeToString(salt) + ":" + b64.encodeToString(hash);
    }

    /**
     * A well-formed hash at the default iterations that no password matches (a password would need a
     * PBKDF2 output of all zero bytes): verifying against it costs what verifying against a real hash
     * costs, without a hash computed first, which in a cold JVM is a large share of the broker's start.
     */
    public static String unmatchable() {
        Base64.Encoder b64 = Base64.getEncoder();
        return PREFIX + ":" + DEFAULT_ITERATIONS + ":" + b64.encodeToString(new byte[SALT_BYTES]) + ":"
                + b64.encodeToString(new byte[HASH_BITS / 8]);
    }

    /** True if {@code password} matches {@code encoded}; false for a malformed hash too. */
    public static boolean verify(char[] password, String encoded) {
        String[] parts = encoded.split(":");
        if (parts.length != 4 || !parts[0].equals(PREFIX)) {
            return false;
        }
        try {
            int iterations = Integer.parseInt(parts[1]);
            byte[] salt = Base64.getDecoder().decode(parts[2]);
            byte[] expected = Base64.getDecoder().decode(parts[3]);
            return MessageDigest.isEqual(expected, pbkdf2(password, salt, iterations));
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    private static byte[] pbkdf2(char[] password, byte[] salt, int iterations) {
        try {
            SecretKeyFactory factory = SecretKeyFactory.getInstance("PBKDF2WithHmacSHA256");
            return factory.generateSecret(new PBEKeySpec(password, salt, iterations, HASH_BITS)).getEncoded();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("PBKDF2WithHmacSHA256 is not available in this JDK", e);
        }
    }
}
