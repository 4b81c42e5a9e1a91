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

    /** A handshake: the window the broker granted in its HELLO_OK. */
    void granted(long windowMessages, long windowBytes) {
        messages = windowMessages;
        bytes = windowBytes;
    }

    /** A PUBLISH_CREDIT gave back that much. */
    void credited(long creditMessages, long creditBytes) {
        messages += creditMessages;
        bytes += creditBytes;
    }

    /** Takes one message of {@code payloadBytes} if it fits. */
    boolean tryTake(int payloadBytes) {
        if (messages < 1 || bytes < payloadBytes) {
            return false;
        }
        messages--;
        bytes -= payloadBytes;
        return true;
    }
}
