package io.sluice.client;

/**
 * The publish window of one {@link Connection} as the client keeps it (docs/protocol.md, "Sequences", publish →
 * confirm): the messages and payload bytes it may still send, as the broker's HELLO_OK granted and each PUBLISH_CREDIT
 * gave back. The client decides from it when it may send; the broker counts the window itself and does not rely on it.
 *
 * <p>Threads: the connection's network thread.
 */
final class ClientPublishWindow {
    private long messages;
    private long bytes;
    private long grantedBytes;
    private long grantedMessages;

    /** A handshake: the window the broker granted in its HELLO_OK. */
    void granted(long windowMessages, long windowBytes) {
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
     * Takes one message of {@code payloadBytes} if it fits, or if the byte window is whole (nothing sent is waiting for
     * its credit) and the message is larger than all of it: such a message never fits, and would wait for ever with
     * every later one behind it. The broker takes it as it takes any frame past the window (it reads nothing more
     * until the window comes back).
     */
    boolean tryTake(int payloadBytes) {
        if (messages < 1 || (bytes < payloadBytes && bytes < grantedBytes)) {
            return false;
        }
        messages--;
        bytes -= payloadBytes;
        return true;
    }
}
