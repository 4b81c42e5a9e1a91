package io.sluice.broker.security;

import io.sluice.broker.auth.Action;
import io.sluice.broker.auth.Authorizer;
import io.sluice.broker.config.BrokerConfig;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class AuthorizerTest {
    private static BrokerConfig.User user(String name, BrokerConfig.Permission... permissions) {
        BrokerConfig.User u = new BrokerConfig.User();
        u.name = name;
        u.permissions = List.of(permissions);
        return u;
    }

    @Test
    void grantsMatchWholeNamesWithStarAsAnyRun() {
        BrokerConfig.Auth auth = new BrokerConfig.Auth();
        auth.users.add(user("alice", new BrokerConfig.Permission("orders.*", List.of("publish", "consume")),
                new BrokerConfig.Permission("audit", List.of("manage"))));
        Authorizer authorizer = new Authorizer(auth);

        assertTrue(authorizer.allowed("alice", Action.PUBLISH, "orders.eu"));
        assertTrue(authorizer.allowed("alice", Action.CONSUME, "orders.eu.dlq"));
        assertTrue(authorizer.allowed("alice", Action.PUBLISH, "orders."));
        assertFalse(authorizer.allowed("alice", Action.PUBLISH, "orders"));
        assertFalse(authorizer.allowed("alice", Action.PUBLISH, "xorders.eu"));
        assertFalse(authorizer.allowed("alice", Action.MANAGE, "orders.eu"));
        assertTrue(authorizer.allowed("alice", Action.MANAGE, "audit"));
        assertFalse(authorizer.allowed("alice", Action.MANAGE, "audit2"));
        assertFalse(authorizer.allowed("mallory", Action.CONSUME, "orders.eu"), "unknown users get nothing");
        assertEquals(5, authorizer.accessDenials());
    }

    @Test
    void regexCharactersInPatternsAreLiteral() {
        BrokerConfig.Auth auth = new BrokerConfig.Auth();
        auth.users.add(user("u", new BrokerConfig.Permission("a.b*[x]", List.of("consume"))));
        Authorizer authorizer = new Authorizer(auth);
        assertTrue(authorizer.allowed("u", Action.CONSUME, "a.bzz[x]"));
        assertFalse(authorizer.allowed("u", Action.CONSUME, "aXbzzx"));
    }

    @Test
    void anonymousGetsEverythingByDefaultOrItsConfiguredGrants() {
        BrokerConfig.Auth auth = new BrokerConfig.Auth();
        assertTrue(new Authorizer(auth).allowed("", Action.MANAGE, "anything.at.all"));

        auth.anonymousPermissions = List.of(new BrokerConfig.Permission("public.*", List.of("consume")));
        Authorizer limited = new Authorizer(auth);
        assertTrue(limited.allowed("", Action.CONSUME, "public.news"));
        assertFalse(limited.allowed("", Action.PUBLISH, "public.news"));
        assertFalse(limited.allowed("", Action.CONSUME, "private"));
    }

    @Test
    void denialNamesUserActionAndQueue() {
        assertEquals("user 'bob' may not publish on queue 'orders.eu' (no matching grant in auth permissions)",
                Authorizer.denial("bob", Action.PUBLISH, "orders.eu"));
        assertTrue(Authorizer.denial("", Action.MANAGE, "q").startsWith("anonymous may not manage on queue 'q'"));
    }

    @Test
    void anyActionShowsAQueueAndOnlyStarGrantsCoverEveryQueue() {
        BrokerConfig.Auth auth = new BrokerConfig.Auth();
        auth.users.add(user("limited", new BrokerConfig.Permission("A*", List.of("publish"))));
        auth.users.add(user("watcher", new BrokerConfig.Permission("*", List.of("monitor"))));
        auth.users.add(user("ops", new BrokerConfig.Permission("**", List.of("manage"))));
        Authorizer authorizer = new Authorizer(auth);

        assertTrue(authorizer.maySee("limited", "A1"));
        assertFalse(authorizer.maySee("limited", "B"));
        assertTrue(authorizer.maySee("watcher", "B"));
        assertFalse(authorizer.allowed("watcher", Action.CONSUME, "B"), "monitor gives no wire action");
        assertFalse(authorizer.allowedOnEveryQueue("limited", null));
        assertTrue(authorizer.allowedOnEveryQueue("watcher", null));
        assertFalse(authorizer.allowedOnEveryQueue("watcher", Action.MANAGE));
        assertTrue(authorizer.allowedOnEveryQueue("ops", Action.MANAGE));
        assertTrue(new Authorizer(new BrokerConfig.Auth()).allowedOnEveryQueue("", Action.MONITOR), "anonymous default: all");
        assertEquals(1, authorizer.accessDenials(), "maySee and allowedOnEveryQueue count nothing");
        assertEquals("user 'limited' may not see queue 'B' (no grant in auth permissions names it)",
                Authorizer.seeDenial("limited", "B"));
    }
}
