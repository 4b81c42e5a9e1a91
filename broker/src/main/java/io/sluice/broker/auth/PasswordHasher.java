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

    /** The iterations a hash may name: fewer is next to no brake on guessing, more makes each login take minutes. */
    public static final int MIN_ITERATIONS = 1_000;
    public static final int MAX_ITERATIONS = 10_000_000;
    private static final int MIN_SALT_BYTES = 16;
    private static final int MAX_SALT_BYTES = 64;

    /**
     * What is wrong with {@code encoded} as a hash, as the end of a sentence about it ("has ..."), or null when it is one
     * {@link #verify} can match: a hash no password matches would leave its user unable to log in, each attempt refused
     * as a wrong password. The hash's own text is never quoted.
     */
    public static String problem(String encoded) {
        String[] parts = encoded.split(":", -1);
        if (parts.length != 4) {
            return "has " + parts.length + " of the 4 parts separated by ':'";
        }
        if (!parts[0].equals(PREFIX)) {
            return "does not start with " + PREFIX + ":";
        }
        if (!parts[1].matches("[0-9]{1,10}")) {
            return "has iterations '" + (parts[1].length() > 20 ? parts[1].substring(0, 20) + "..." : parts[1]) + "', not a whole number"
                    + (parts[1].matches("[0-9]+") ? " up to " + MAX_ITERATIONS : "");
        }
        long iterations = Long.parseLong(parts[1]);
        if (iterations < MIN_ITERATIONS || iterations > MAX_ITERATIONS) {
            return "has " + iterations + " iterations, outside " + MIN_ITERATIONS + ".." + MAX_ITERATIONS;
        }
        byte[] salt = base64(parts[2]);
        if (salt == null) {
            return "has a salt that is not base64";
        }
        if (salt.length < MIN_SALT_BYTES || salt.length > MAX_SALT_BYTES) {
            return "has a salt of " + salt.length + " bytes, outside " + MIN_SALT_BYTES + ".." + MAX_SALT_BYTES;
        }
        byte[] hash = base64(parts[3]);
        if (hash == null) {
            return "has a hash that is not base64";
        }
        if (hash.length != HASH_BITS / 8) {
            return "has a hash of " + hash.length + " bytes, where PBKDF2-HMAC-SHA256 makes " + HASH_BITS / 8;
        }
        return null;
    }

    private static byte[] base64(String text) {
        try {
            return Base64.getDecoder().decode(text);
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    /** True if {@code password} matches {@code encoded}; false for a malformed hash too (the configuration refuses those). */
    public static boolean verify(char[] password, String encoded) {
        if (problem(encoded) != null) {
            return false;
        }
        String[] parts = encoded.split(":");
        int iterations = Integer.parseInt(parts[1]);
        byte[] salt = Base64.getDecoder().decode(parts[2]);
        byte[] expected = Base64.getDecoder().decode(parts[3]);
        return MessageDigest.isEqual(expected, pbkdf2(password, salt, iterations));
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
