package io.sluice.broker.auth;

import io.sluice.broker.config.BrokerConfig;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;

/**
 * Per-user permissions on queue-name patterns. A user may do an action on a queue if any of its grants
 * names the action and has a pattern matching the whole queue name, where {@code *} matches any run of
 * characters (dots included) and everything else matches itself. No grant, no access. Anonymous
 * connections (user "") get {@code auth.anonymous-permissions}, by default every action on {@code *}.
 * A user may <em>see</em> a queue (its figures in the admin API) with any action on it.
 * Immutable after construction apart from the denial counter; thread-safe.
 */
public final class Authorizer {
    private record Grant(Pattern queues, Set<Action> actions, boolean everyQueue) {
        /** A grant on {@code *} matches without a regular expression: every PUBLISH asks, so no matcher per frame. */
        boolean covers(String queue) {
            return everyQueue || queues.matcher(queue).matches();
        }
    }

    private final Map<String, List<Grant>> grants = new HashMap<>();
    private final AtomicLong denials = new AtomicLong();

    public Authorizer(BrokerConfig.Auth auth) {
        for (BrokerConfig.User u : auth.users) {
            grants.put(u.name, compile(u.permissions));
        }
        List<BrokerConfig.Permission> anonymous = auth.anonymousPermissions != null ? auth.anonymousPermissions
                : List.of(new BrokerConfig.Permission("*", List.of("publish", "consume", "manage", "monitor")));
        grants.put("", compile(anonymous));
    }

    private static List<Grant> compile(List<BrokerConfig.Permission> permissions) {
        List<Grant> out = new ArrayList<>();
        if (permissions == null) {
            return out;
        }
        for (BrokerConfig.Permission p : permissions) {
            Set<Action> actions = EnumSet.noneOf(Action.class);
            for (String a : p.actions) {
                actions.add(Action.parse(a));
            }
            out.add(new Grant(glob(p.queues), actions, p.queues.chars().allMatch(c -> c == '*')));
        }
        return out;
    }

    /** A glob where only {@code *} is special, as an anchored regular expression. */
    static Pattern glob(String glob) {
        StringBuilder regex = new StringBuilder();
        String[] parts = glob.split("\\*", -1);
        for (int i = 0; i < parts.length; i++) {
            if (i > 0) {
                regex.append(".*");
            }
            if (!parts[i].isEmpty()) {
                regex.append(Pattern.quote(parts[i]));
            }
        }
        return Pattern.compile(regex.toString(), Pattern.DOTALL);
    }

    /** True if {@code user} ("" for anonymous) may do {@code action} on {@code queue}; counts refusals. */
    public boolean allowed(String user, Action action, String queue) {
        for (Grant g : grantsOf(user)) {
            if (g.actions().contains(action) && g.covers(queue)) {
                return true;
            }
        }
        denials.incrementAndGet();
        return false;
    }

    /**
     * True if {@code user} holds any action on {@code queue}, so it may see the queue's figures. Counts
     * nothing, since listings ask it of every queue; a refused request counts with {@link #countDenial()}.
     */
    public boolean maySee(String user, String queue) {
        for (Grant g : grantsOf(user)) {
            if (!g.actions().isEmpty() && g.covers(queue)) {
                return true;
            }
        }
        return false;
    }

    /**
     * True if one of {@code user}'s grants gives {@code action} (any action if null) on every queue,
     * i.e. its pattern is {@code *}. Counts nothing.
     */
    public boolean allowedOnEveryQueue(String user, Action action) {
        for (Grant g : grantsOf(user)) {
            if (g.everyQueue() && (action == null ? !g.actions().isEmpty() : g.actions().contains(action))) {
                return true;
            }
        }
        return false;
    }

    /** Counts a request refused for a missing permission that {@link #allowed} did not see. */
    public void countDenial() {
        denials.incrementAndGet();
    }

    private List<Grant> grantsOf(String user) {
        return grants.getOrDefault(user == null ? "" : user, List.of());
    }

    /** The message of an ACCESS_DENIED answer: names the user, the action and the queue. */
    public static String denial(String user, Action action, String queue) {
        return who(user) + " may not " + action.configName() + " on queue '" + queue + "' (no matching grant in auth permissions)";
    }

    /** The message of a refused look at a queue: names the user and the queue. */
    public static String seeDenial(String user, String queue) {
        return who(user) + " may not see queue '" + queue + "' (no grant in auth permissions names it)";
    }

    /** "anonymous" or "user 'name'", as the refusals name who asked. */
    public static String who(String user) {
        return user == null || user.isEmpty() ? "anonymous" : "user '" + user + "'";
    }

    /** Frames refused with ACCESS_DENIED since the broker started. */
    public long accessDenials() {
        return denials.get();
    }
}
