package io.sluice.broker.net;

import io.sluice.broker.auth.Authorizer;
import io.sluice.broker.security.ConnectionLimits;
import io.sluice.broker.security.LoginBackoff;
import io.sluice.broker.log.RateLimitedLog;

/**
 * What every connection shares for access control: who may do what, the broker-wide limits,
 * whether connections without a user are let in on this listener, the brake on password guessing and
 * the rate-limited log of rejected connections (both shared with the admin port). Thread-safe.
 */
public record ConnectionSecurity(Authorizer authorizer, ConnectionLimits limits, boolean anonymousAllowed,
                                 LoginBackoff loginBackoff, RateLimitedLog rejectionLog) {
}
