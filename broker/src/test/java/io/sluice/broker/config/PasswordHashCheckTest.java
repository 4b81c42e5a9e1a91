package io.sluice.broker.config;

import io.sluice.broker.auth.PasswordHasher;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * A password hash that cannot be read (a part missing, bad base64, iterations of 0 or past an int) was accepted at
 * start, and its user could then never log in, each attempt answered "wrong user name or password".
 */
class PasswordHashCheckTest {
    @TempDir
    Path dir;

    private static final String SALT = "AAAAAAAAAAAAAAAAAAAAAA=="; // 16 bytes
    private static final String HASH = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="; // 32 bytes

    private String refused(String hash) throws Exception {
        Path file = dir.resolve("sluice.yaml");
        Files.writeString(file, "auth:\n  users:\n    - name: app\n      password-hash: \"" + hash + "\"\n");
        return assertThrows(ConfigException.class, () -> new ConfigLoader().load(file, Map.of())).getMessage();
    }

    @Test
    void aHashThatCannotBeReadIsRefusedNamingTheUserAndWhatIsWrong() throws Exception {
        String prefix = "invalid configuration:\n  - auth.users[0].password-hash of user 'app' ";
        String form = " (the form is pbkdf2-sha256:<iterations>:<salt base64>:<hash base64>; print one with `sluice hash-password`)";
        assertEquals(prefix + "has 2 of the 4 parts separated by ':'" + form, refused("pbkdf2-sha256:"));
        assertEquals(prefix + "has iterations 'abc', not a whole number" + form, refused("pbkdf2-sha256:abc:!!!:???"));
        assertEquals(prefix + "has 0 iterations, outside 1000..10000000" + form, refused("pbkdf2-sha256:0:" + SALT + ":" + HASH));
        assertEquals(prefix + "has iterations '999999999999', not a whole number up to 10000000" + form,
                refused("pbkdf2-sha256:999999999999:" + SALT + ":" + HASH));
        assertEquals(prefix + "has a salt that is not base64" + form, refused("pbkdf2-sha256:210000:!!!:" + HASH));
        assertEquals(prefix + "has a salt of 3 bytes, outside 16..64" + form, refused("pbkdf2-sha256:210000:AAAA:" + HASH));
        assertEquals(prefix + "has a hash of 3 bytes, where PBKDF2-HMAC-SHA256 makes 32" + form,
                refused("pbkdf2-sha256:210000:" + SALT + ":AAAA"));
        assertEquals(prefix + "has a hash that is not base64" + form, refused("pbkdf2-sha256:210000:" + SALT + ":???"));
    }

    @Test
    void aHashAsHashPasswordPrintsItIsAccepted() throws Exception {
        Path file = dir.resolve("ok.yaml");
        Files.writeString(file, "auth:\n  users:\n    - name: app\n      password-hash: \"" + PasswordHasher.hash("pw".toCharArray()) + "\"\n");
        assertEquals(1, new ConfigLoader().load(file, Map.of()).auth.users.size());
        assertEquals(null, PasswordHasher.problem("pbkdf2-sha256:" + PasswordHasher.MIN_ITERATIONS + ":" + SALT + ":" + HASH));
    }
}
