package io.sluice.broker.net;

import io.sluice.broker.auth.Authorizer;
import io.sluice.broker.security.ConnectionLimits;

/**
 * What every connection shares for access control: who may do what, the broker-wide limits and
 * whether connections without a user are let in on this listener. Thread-safe.
 */
public record ConnectionSecurity(Authorizer authorizer, ConnectionLimits limits, boolean anonymousAllowed) {
}
