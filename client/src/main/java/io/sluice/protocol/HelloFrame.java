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
 */
public record HelloFrame(int minVersion, int maxVersion, String clientName, int maxFrameBytes,
                         int heartbeatIntervalMs, String user, String password) implements Frame {
    public HelloFrame {
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
    public void encodeBody(ByteBuf out) {
        out.writeShort(minVersion);
        out.writeShort(maxVersion);
        WireFormat.writeString(out, clientName);
        out.writeInt(maxFrameBytes);
        out.writeInt(heartbeatIntervalMs);
        WireFormat.writeString(out, user);
        WireFormat.writeString(out, password);
    }

    static HelloFrame decodeBody(BodyReader reader) {
        return new HelloFrame(
                reader.readUnsignedShort("minVersion"),
                reader.readUnsignedShort("maxVersion"),
                reader.readString("clientName"),
                reader.readNonNegativeInt("maxFrameBytes"),
                reader.readNonNegativeInt("heartbeatIntervalMs"),
                reader.readString("user"),
                reader.readString("password"));
    }

    @Override
    public String toString() {
        return "HelloFrame[versions=" + minVersion + ".." + maxVersion + ", clientName=" + clientName
                + ", maxFrameBytes=" + maxFrameBytes + ", heartbeatIntervalMs=" + heartbeatIntervalMs
                + ", user=" + user + ", password=" + (password.isEmpty() ? "" : "***") + "]";
    }
}
