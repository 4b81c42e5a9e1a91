package io.sluice.broker.config;

import java.util.List;

/** The configuration is unusable; the message lists every problem found, each naming its key. */
public final class ConfigException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public ConfigException(List<String> problems) {
        super("invalid configuration:\n  - " + String.join("\n  - ", problems));
    }

    public ConfigException(String problem, Throwable cause) {
        super("invalid configuration: " + problem, cause);
    }
}
