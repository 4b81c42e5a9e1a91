package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

/**
 * HELLO_OK (0x02, broker to client): accepts a HELLO and states the values both peers now use, plus the
 * initial publish window.
 *
 * <pre>
 * uint16 version | int32 maxFrameBytes | int32 heartbeatIntervalMs | string brokerName
 * | int32 publishWindowMessages | int64 publishWindowBytes
 * </pre>
 * The publish window is how many messages and bytes the client may have published but not yet settled;
 * PUBLISH_CREDIT widens it. Its bytes are each message's headers and payload when the broker grants
 * {@link HelloFrame#CAPABILITY_WINDOW_COUNTS_HEADERS}, else its payload alone.
 *
 * <p>Flags: the capabilities the broker grants on this connection, only ever bits the client asked for in
 * its HELLO (so a client never meets a bit it does not know): {@link HelloFrame#CAPABILITY_TRANSACTIONS},
 * {@link HelloFrame#CAPABILITY_WINDOW_COUNTS_HEADERS}.
 */
public record HelloOkFrame(int version, int maxFrameBytes, int heartbeatIntervalMs, String brokerName,
                           int publishWindowMessages, long publishWindowBytes, int capabilities) implements Frame {
    /** A HELLO_OK granting no capability. */
    public HelloOkFrame(int version, int maxFrameBytes, int heartbeatIntervalMs, String brokerName, int publishWindowMessages,
                        long publishWindowBytes) {
        this(version, maxFrameBytes, heartbeatIntervalMs, brokerName, publishWindowMessages, publishWindowBytes, 0);
    }

    public HelloOkFrame {
        if ((capabilities & ~FrameType.HELLO_OK.definedFlags()) != 0) {
            throw new IllegalArgumentException("capabilities " + FrameType.hex(capabilities) + " are not all defined for HELLO_OK");
        }
        WireFormat.checkUnsignedShort("version", version);
        WireFormat.checkNonNegative("maxFrameBytes", maxFrameBytes);
        WireFormat.checkNonNegative("heartbeatIntervalMs", heartbeatIntervalMs);
        WireFormat.checkString("brokerName", brokerName);
        WireFormat.checkNonNegative("publishWindowMessages", publishWindowMessages);
        WireFormat.checkNonNegative("publishWindowBytes", publishWindowBytes);
    }

    @Override
    public FrameType type() {
        return FrameType.HELLO_OK;
    }

    @Override
    public int flags() {
        return capabilities;
    }

    /** Whether the broker serves transactions on this connection. */
    public boolean grantsTransactions() {
        return (capabilities & HelloFrame.CAPABILITY_TRANSACTIONS) != 0;
    }

    /** Whether the publish window's bytes count headers and payload (else payload alone) on this connection. */
    public boolean grantsWindowCountsHeaders() {
        return (capabilities & HelloFrame.CAPABILITY_WINDOW_COUNTS_HEADERS) != 0;
    }

    @Override
    public void encodeBody(ByteBuf out) {
        out.writeShort(version);
        out.writeInt(maxFrameBytes);
        out.writeInt(heartbeatIntervalMs);
        WireFormat.writeString(out, brokerName);
        out.writeInt(publishWindowMessages);
        out.writeLong(publishWindowBytes);
    }

    static HelloOkFrame decodeBody(BodyReader reader, int flags) {
        return new HelloOkFrame(
                reader.readUnsignedShort("version"),
                reader.readNonNegativeInt("maxFrameBytes"),
                reader.readNonNegativeInt("heartbeatIntervalMs"),
                reader.readString("brokerName"),
                reader.readNonNegativeInt("publishWindowMessages"),
                reader.readNonNegativeLong("publishWindowBytes"),
                flags);
    }
}
