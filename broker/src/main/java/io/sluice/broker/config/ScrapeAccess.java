package io.sluice.broker.config;

import com.fasterxml.jackson.annotation.JsonProperty;

/**
 * Who may read {@code /metrics} ({@code metrics.scrape-access}). The scrape names every queue and
 * its figures, so with credentials it takes a user who may see every queue.
 */
public enum ScrapeAccess {
    /** No credentials: keep the port on loopback or a private network. */
    @JsonProperty("open")
    OPEN,
    /**
     * HTTP Basic credentials of a user with a grant on every queue ({@code queues: "*"}, any action,
     * {@code monitor} being the least); with no users configured, anonymous requests under the same rule.
     */
    @JsonProperty("authenticated")
    AUTHENTICATED
}
