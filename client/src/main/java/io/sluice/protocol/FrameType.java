package io.sluice.protocol;

import static io.sluice.protocol.FrameDirection.BOTH;
import static io.sluice.protocol.FrameDirection.BROKER_TO_CLIENT;
import static io.sluice.protocol.FrameDirection.CLIENT_TO_BROKER;

/**
 * Every frame type of protocol version 1, with its stable one-byte code, its direction and the flag bits it
 * defines.
 *
 * <p>Rule "optional types": codes {@code 0x80..0xFF} are optional. A receiver that does not know an optional
 * code skips the whole frame (its flags are not checked). A code below {@code 0x80} that the receiver does
 * not know is an error, UNKNOWN_FRAME_TYPE, because a newer peer sent something whose meaning cannot be
 * ignored. Version 1 defines no optional frame types.
 *
 * <p>Rule "flags": a flag bit not in {@link #definedFlags()} must be zero; a set unknown bit is
 * MALFORMED_FRAME. HELLO defines every bit: its flags are capabilities asked for, and a broker ignores
 * those it does not know (docs/protocol.md, "Capabilities").
 */
public enum FrameType {
    /** Every flag bit is a capability the client asks for; a broker ignores those it does not know. */
    HELLO(0x01, CLIENT_TO_BROKER, HelloFrame.ALL_CAPABILITY_BITS),
    /** The capabilities granted: only bits the client asked for, so only bits it knows. */
    HELLO_OK(0x02, BROKER_TO_CLIENT, HelloFrame.KNOWN_CAPABILITIES),
    HEARTBEAT(0x03, BOTH, 0),
    CLOSE(0x04, BOTH, 0),

    DECLARE_QUEUE(0x10, CLIENT_TO_BROKER, DeclareQueueFrame.FLAG_PASSIVE),
    DELETE_QUEUE(0x11, CLIENT_TO_BROKER, 0),
    PURGE_QUEUE(0x12, CLIENT_TO_BROKER, 0),
    OK(0x13, BROKER_TO_CLIENT, OkFrame.FLAG_MESSAGE_COUNT),
    ERROR(0x14, BROKER_TO_CLIENT, 0),

    PUBLISH(0x20, CLIENT_TO_BROKER, 0),
    CONFIRM(0x21, BROKER_TO_CLIENT, 0),
    PUBLISH_ERROR(0x22, BROKER_TO_CLIENT, 0),
    FLOW(0x23, BROKER_TO_CLIENT, 0),
    PUBLISH_CREDIT(0x24, BROKER_TO_CLIENT, 0),
    PRODUCER_INIT(0x25, CLIENT_TO_BROKER, 0),
    PRODUCER_OK(0x26, BROKER_TO_CLIENT, 0),

    SUBSCRIBE(0x30, CLIENT_TO_BROKER, 0),
    CREDIT(0x31, CLIENT_TO_BROKER, 0),
    DELIVER(0x32, BROKER_TO_CLIENT, 0),
    ACK(0x33, CLIENT_TO_BROKER, 0),
    NACK(0x34, CLIENT_TO_BROKER, 0),
    UNSUBSCRIBE(0x35, CLIENT_TO_BROKER, 0),

    TX_BEGIN(0x40, CLIENT_TO_BROKER, 0),
    TX_PUBLISH(0x41, CLIENT_TO_BROKER, 0),
    TX_ACK(0x42, CLIENT_TO_BROKER, 0),
    TX_COMMIT(0x43, CLIENT_TO_BROKER, 0),
    TX_ROLLBACK(0x44, CLIENT_TO_BROKER, 0),
    TX_ABORTED(0x45, BROKER_TO_CLIENT, 0);

    /** The lowest optional frame type code; see the class rule "optional types". */
    public static final int FIRST_OPTIONAL_CODE = 0x80;

    private static final FrameType[] BY_CODE = new FrameType[256];

    static {
        for (FrameType type : values()) {
            BY_CODE[type.code] = type;
        }
    }

    private final int code;
    private final FrameDirection direction;
    private final int definedFlags;

    FrameType(int code, FrameDirection direction, int definedFlags) {
        this.code = code;
        this.direction = direction;
        this.definedFlags = definedFlags;
    }

    /** The {@code uint8} written in the frame header. */
    public int code() {
        return code;
    }

    public FrameDirection direction() {
        return direction;
    }

    /** The flag bits this type gives a meaning to; every other bit must be zero. */
    public int definedFlags() {
        return definedFlags;
    }

    /** Returns the type for a code, or {@code null} when version 1 defines none. */
    public static FrameType fromCode(int code) {
        return code >= 0 && code < BY_CODE.length ? BY_CODE[code] : null;
    }

    /** Whether a receiver that does not know this code may skip the frame. */
    public static boolean isOptional(int code) {
        return code >= FIRST_OPTIONAL_CODE;
    }

    /** The code as the documentation writes it, {@code 0x20}. */
    static String hex(int value) {
        return String.format("0x%02X", value);
    }
}
