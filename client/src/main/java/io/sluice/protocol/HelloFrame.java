package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

/**
 * HELLO (0x01, client to broker): the first frame of every connection; proposes versions and limits and
 * carries the credentials. Empty user and password mean anonymous.
 *
 * <pre>
 * uint16 minVersion | uint16 maxVersion | string clientName | int32 maxFrameBytes
 * | int32 heartbeatIntervalMs | string user | string password
 * </pre>
 * {@code maxFrameBytes} and {@code heartbeatIntervalMs} are wishes (&gt;= 0; 0 means "broker's default");
 * the broker answers with the values it chose in HELLO_OK.
 *
 * <p>Flags: the <em>capabilities</em> the client asks for, one bit each ({@link #CAPABILITY_TRANSACTIONS},
 * {@link #CAPABILITY_WINDOW_COUNTS_HEADERS}).
 * Every bit of HELLO's flags byte is defined, so a broker never refuses a HELLO for a bit it does not know:
 * it grants, in HELLO_OK's flags, the bits it knows and serves on this connection, and ignores the rest.
 */
public record HelloFrame(int minVersion, int maxVersion, String clientName, int maxFrameBytes,
                         int heartbeatIntervalMs, String user, String password, int capabilities) implements Frame {
    /** Capability bit: the client may use transactions (TX_* frames, docs/protocol.md "Transactions"). */
    public static final int CAPABILITY_TRANSACTIONS = 0x01;
    /**
     * Capability bit: the publish window's bytes count each message's headers and payload, not its payload alone
     * (docs/protocol.md, "Capabilities"). Without it a message's headers took no window at all, so a client within its
     * window could have the broker hold up to a window of messages each carrying headers of up to the largest message.
     */
    public static final int CAPABILITY_WINDOW_COUNTS_HEADERS = 0x02;
    /** The capabilities this codec knows: what a client of this version asks for, and what HELLO_OK may grant. */
    public static final int KNOWN_CAPABILITIES = CAPABILITY_TRANSACTIONS | CAPABILITY_WINDOW_COUNTS_HEADERS;
    /** Every bit of the flags byte: the capabilities a client may ask for, known to this codec or not. */
    public static final int ALL_CAPABILITY_BITS = 0xFF;

    /** A HELLO asking for no capability. */
    public HelloFrame(int minVersion, int maxVersion, String clientName, int maxFrameBytes, int heartbeatIntervalMs,
                      String user, String password) {
        this(minVersion, maxVersion, clientName, maxFrameBytes, heartbeatIntervalMs, user, password, 0);
    }

    public HelloFrame {
        if ((capabilities & ~ALL_CAPABILITY_BITS) != 0) {
            throw new IllegalArgumentException("capabilities " + capabilities + " do not fit the flags byte");
        }
        WireFormat.checkUnsignedShort("minVersion", minVersion);
        WireFormat.checkUnsignedShort("maxVersion", maxVersion);
        WireFormat.checkString("clientName", clientName);
        WireFormat.checkNonNegative("maxFrameBytes", maxFrameBytes);
        WireFormat.checkNonNegative("heartbeatIntervalMs", heartbeatIntervalMs);
        WireFormat.checkString("user", user);
        WireFormat.checkString("password", password);
    }

    @Override
    public FrameType type() {
        return FrameType.HELLO;
    }

    @Override
    public int flags() {
        return capabilities;
    }

    @Override
    public void encodeBody(ByteBuf out) {
        out.writeShort(minVersion);
        out.writeShort(maxVersion);
        WireFormat.writeString(out, clientName);
        out.writeInt(maxFrameBytes);
        out.writeInt(heartbeatIntervalMs);
        WireFormat.writeString(out, user);
        WireFormat.writeString(out, password);
    }

    static HelloFrame decodeBody(BodyReader reader, int flags) {
        return new HelloFrame(
                reader.readUnsignedShort("minVersion"),
                reader.readUnsignedShort("maxVersion"),
                reader.readString("clientName"),
                reader.readNonNegativeInt("maxFrameBytes"),
                reader.readNonNegativeInt("heartbeatIntervalMs"),
                reader.readString("user"),
                reader.readString("password"),
                flags);
    }

    @Override
    public String toString() {
        return "HelloFrame[versions=" + minVersion + ".." + maxVersion + ", clientName=" + clientName
                + ", maxFrameBytes=" + maxFrameBytes + ", heartbeatIntervalMs=" + heartbeatIntervalMs
                + ", user=" + user + ", password=" + (password.isEmpty() ? "" : "***") + ", capabilities="
                + FrameType.hex(capabilities) + "]";
    }
}
