package io.sluice.broker.auth;

import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.log.Printable;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Checks HELLO credentials against the configured users. An unknown user costs the same hashing work
 * as a known one, so timing does not reveal which user names exist; hashes are compared in constant
 * time ({@link PasswordHasher#verify}). Every refusal is counted ({@link #authenticationFailures()}).
 * Thread-safe.
 */
public final class Authenticator {
    /** What an unknown user's password is verified against, at the cost of a known user's. */
    private static final String DUMMY_HASH = PasswordHasher.unmatchable();

    /** The outcome of a handshake: the user it runs as ("" for anonymous), or the reason to log. */
    public record Result(String user, String rejected) {
        public boolean accepted() {
            return rejected == null;
        }
    }

    private final boolean allowAnonymous;
    private final Map<String, String> hashes = new HashMap<>();
    private final AtomicLong failures = new AtomicLong();

    public Authenticator(BrokerConfig.Auth auth) {
        this.allowAnonymous = auth.allowAnonymous;
        for (BrokerConfig.User u : auth.users) {
            hashes.put(u.name, u.passwordHash);
        }
    }

    /** Returns null if accepted, else the reason to log (never containing the password). */
    public String check(String user, String password) {
        return authenticate(user, password, null, allowAnonymous).rejected();
    }

    /**
     * Decides who a connection is. A HELLO user is checked by password; with no HELLO user, a verified
     * TLS client certificate whose subject CN names a configured user makes it that user; otherwise
     * the connection is anonymous, allowed only if {@code anonymousAllowed} (which folds in
     * {@code auth.allow-anonymous} and the non-loopback rule of {@code auth.allow-anonymous-remote}).
     * A password without a user is refused: the client meant to log in as someone, and would otherwise run
     * as anonymous (or as its certificate's user) without a word. The reason never contains the password.
     */
    public Result authenticate(String user, String password, String certificateUser, boolean anonymousAllowed) {
        Result result;
        if ((user == null || user.isEmpty()) && password != null && !password.isEmpty()) {
            result = new Result("", "a password was given without a user; give the user it belongs to, or neither for"
                    + " anonymous access");
        } else if (user == null || user.isEmpty()) {
            if (certificateUser != null && hashes.containsKey(certificateUser)) {
                result = new Result(certificateUser, null);
            } else if (certificateUser != null) {
                result = new Result("", "the client certificate's CN '" + certificateUser + "' is not a configured user");
            } else {
                result = anonymousAllowed ? new Result("", null) : new Result("",
                        "anonymous access is not allowed (auth.allow-anonymous, or auth.allow-anonymous-remote on a non-loopback listener)");
            }
        } else if (Printable.firstControl(user) >= 0) {
            // No configured user's name holds one (BrokerConfig), and the name would be quoted into the log; not hashing
            // tells a guesser nothing, since no configured user can be named so.
            result = new Result("", "the user name holds a control character (U+" + String.format("%04X", Printable.firstControl(user))
                    + "), which no user's name does");
        } else if (hashes.isEmpty()) {
            // Nothing to keep from a guesser (no user exists, which anonymous access shows anyway), so no key derivation:
            // a client sending credentials in a loop must not cost the broker one per attempt.
            result = new Result(user, "user '" + user + "' cannot log in: no users are configured (auth.users)");
        } else {
            String hash = hashes.get(user);
            boolean ok = PasswordHasher.verify(password == null ? new char[0] : password.toCharArray(),
                    hash == null ? DUMMY_HASH : hash);
            result = hash != null && ok ? new Result(user, null)
                    : new Result(user, "wrong user name or password for user '" + user + "'");
        }
        if (!result.accepted()) {
            failures.incrementAndGet();
        }
        return result;
    }

    /** Handshakes refused since the broker started (wrong password, unknown user, a password without a user, anonymous not allowed). */
    public long authenticationFailures() {
        return failures.get();
    }
}
