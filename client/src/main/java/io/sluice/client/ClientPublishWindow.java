package io.sluice.client;

/**
 * The publish window of one {@link Connection} as the client keeps it (docs/protocol.md, "Sequences", publish →
 * confirm): the messages and bytes it may still send, as the broker's HELLO_OK granted and each PUBLISH_CREDIT
 * gave back. Its bytes are a message's headers and payload when HELLO_OK granted WINDOW_COUNTS_HEADERS, its payload
 * alone from a broker that predates that capability: the unit the broker counts in, or credits would not match what
 * was taken. The client decides from it when it may send; the broker counts the window itself and does not rely on it.
 *
 * <p>Threads: the connection's network thread.
 */
final class ClientPublishWindow {
    private long messages;
    private long bytes;
    private long grantedBytes;
    private long grantedMessages;
    private boolean countsHeaders;

    /** A handshake: the window the broker granted in its HELLO_OK, and whether its bytes count headers. */
    void granted(long windowMessages, long windowBytes, boolean windowCountsHeaders) {
        countsHeaders = windowCountsHeaders;
        messages = windowMessages;
        grantedMessages = windowMessages;
        bytes = windowBytes;
        grantedBytes = windowBytes;
    }

    /**
     * The messages the broker's HELLO_OK granted: also how far below a producer's highest stored sequence the broker
     * still tells a resend from a new message (docs/protocol.md, SEQUENCE_OUT_OF_WINDOW).
     */
    long grantedMessages() {
        return grantedMessages;
    }

    /** A PUBLISH_CREDIT gave back that much. */
    void credited(long creditMessages, long creditBytes) {
        messages += creditMessages;
        bytes += creditBytes;
    }

    /**
     * Takes one message of {@code headersAndPayloadBytes}, of which {@code payloadBytes} payload, if it fits, or if the byte window is whole (nothing sent is waiting for
     * its credit) and the message is larger than all of it: such a message never fits, and would wait for ever with
     * every later one behind it. The broker takes it as it takes any frame past the window (it reads nothing more
     * until the window comes back).
     */
    boolean tryTake(int headersAndPayloadBytes, int payloadBytes) {
        int taken = countsHeaders ? headersAndPayloadBytes : payloadBytes;
        if (messages < 1 || (bytes < taken && bytes < grantedBytes)) {
            return false;
        }
        messages--;
        bytes -= taken;
        return true;
    }
}
