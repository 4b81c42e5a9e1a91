package io.sluice.broker.auth;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The hash unknown users are verified against matches no password and costs what a real one costs: the
 * same scheme, iterations and lengths, so that the time of a refusal does not tell whether the user
 * exists (Authenticator).
 */
class PasswordHasherTest {
    @Test
    void theUnmatchableHashHasTheShapeAndCostOfARealOne() {
        String real = PasswordHasher.hash("secret".toCharArray());
        String unmatchable = PasswordHasher.unmatchable();
        String[] r = real.split(":");
        String[] u = unmatchable.split(":");
        assertEquals(r.length, u.length);
        assertEquals(r[0], u[0], "scheme");
        assertEquals(r[1], u[1], "iterations");
        assertEquals(r[2].length(), u[2].length(), "salt length");
        assertEquals(r[3].length(), u[3].length(), "hash length");
        assertTrue(PasswordHasher.verify("secret".toCharArray(), real));
        for (String password : new String[] {"", "secret", "not a password"}) {
            assertFalse(PasswordHasher.verify(password.toCharArray(), unmatchable), "'" + password + "' matches");
        }
        assertArrayEquals(PasswordHasher.unmatchable().toCharArray(), unmatchable.toCharArray(), "the same every time");
    }
}
