package io.sluice.broker.auth;

import java.util.Locale;

/**
 * What a user may do to a queue. MANAGE covers declare, delete and purge; MONITOR only reading the
 * queue's figures through the admin API and {@code /metrics} (no wire frame needs it). Any action on a
 * queue lets the user see its figures.
 */
public enum Action {
    PUBLISH, CONSUME, MANAGE, MONITOR;

    public String configName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** Parses a config name (publish, consume, manage, monitor); throws naming the value and the choices. */
    public static Action parse(String name) {
        for (Action a : values()) {
            if (a.configName().equals(name)) {
                return a;
            }
        }
        throw new IllegalArgumentException("action '" + name + "' is not one of publish, consume, manage, monitor");
    }
}
