package io.sluice.broker;

import java.nio.channels.UnresolvedAddressException;
import java.util.Locale;

/**
 * Turns a failed bind into the sentence an operator needs. The JDK and Netty's epoll transport report
 * the same errno with different exceptions (a {@code BindException}, or Netty's checked
 * {@code NativeIoException} thrown undeclared), so the cause is read from the operating system's
 * wording, which both carry.
 */
public final class ListenFailure {
    private ListenFailure() {
    }

    /**
     * "cannot listen on ADDRESS:PORT (KEY): REASON", where KEY is the setting to change: the port's key
     * when the port is taken or privileged, the address's key when the address is not on this machine.
     */
    public static String describe(String address, int port, String addressKey, String portKey, Throwable failure) {
        String reason = reasonOf(failure);
        String text = reason.toLowerCase(Locale.ROOT);
        String key;
        if (failure instanceof UnresolvedAddressException || text.contains("unresolved")) {
            key = addressKey;
            reason = "the address does not resolve to an IP address";
        } else if (text.contains("address already in use")) {
            key = portKey;
            reason = "the address is already in use by another process";
        } else if (text.contains("cannot assign requested address")) {
            key = addressKey;
            reason = "the address is not one of this machine's";
        } else if (text.contains("permission denied")) {
            key = portKey;
            reason = "permission denied (ports below 1024 need root or CAP_NET_BIND_SERVICE)";
        } else {
            key = portKey;
        }
        return "cannot listen on " + address + ":" + port + " (" + key + "): " + reason;
    }

    private static String reasonOf(Throwable failure) {
        Throwable t = failure;
        while (t.getMessage() == null && t.getCause() != null) {
            t = t.getCause();
        }
        if (t.getMessage() == null) {
            return t.getClass().getSimpleName();
        }
        String message = t.getMessage();
        // Netty's native transport says "bind(..) failed: Address already in use"; the part after the colon is the errno's text.
        int colon = message.lastIndexOf(": ");
        return colon >= 0 ? message.substring(colon + 2) : message;
    }
}
