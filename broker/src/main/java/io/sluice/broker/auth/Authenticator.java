package io.sluice.broker.auth;

import io.sluice.broker.config.BrokerConfig;

import java.util.HashMap;
import java.util.Map;

/**
 * Checks HELLO credentials against the configured users. An unknown user costs the same hashing work
 * as a known one, so timing does not reveal which user names exist. Thread-safe.
 */
public final class Authenticator {
    private static final String DUMMY_HASH = PasswordHasher.hash("not a password".toCharArray());

    private final boolean allowAnonymous;
    private final Map<String, String> hashes = new HashMap<>();

    public Authenticator(BrokerConfig.Auth auth) {
        this.allowAnonymous = auth.allowAnonymous;
        for (BrokerConfig.User u : auth.users) {
            hashes.put(u.name, u.passwordHash);
        }
    }

    /** Returns null if accepted, else the reason to log (never containing the password). */
    public String check(String user, String password) {
        if (user == null || user.isEmpty()) {
            return allowAnonymous ? null : "anonymous access is not allowed (auth.allow-anonymous is false)";
        }
        String hash = hashes.get(user);
        boolean ok = PasswordHasher.verify(password == null ? new char[0] : password.toCharArray(), hash == null ? DUMMY_HASH : hash);
        return hash != null && ok ? null : "wrong user name or password for user '" + user + "'";
    }
}
