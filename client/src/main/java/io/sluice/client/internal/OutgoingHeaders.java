package io.sluice.client.internal;

import io.netty.buffer.ByteBufUtil;
import io.sluice.protocol.MessageHeader;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** The headers of a message on its way to the broker, as producers and transactions take them. Stateless. */
public final class OutgoingHeaders {
    /** producerId, sequence and the two length fields of a PUBLISH message. */
    private static final int MESSAGE_OVERHEAD_BYTES = 24;

    private OutgoingHeaders() {
    }

    /** The caller's headers, copied unless there are none (the common case, which List.copyOf also pays for). */
    public static List<MessageHeader> copyOf(List<MessageHeader> headers) {
        return headers.isEmpty() ? List.of() : List.copyOf(headers);
    }

    /** String headers, UTF-8 encoded, in the map's iteration order. */
    public static List<MessageHeader> of(Map<String, String> headers) {
        if (headers.isEmpty()) {
            return List.of();
        }
        List<MessageHeader> list = new ArrayList<>(headers.size());
        headers.forEach((key, value) -> list.add(MessageHeader.of(key, value)));
        return list;
    }

    /**
     * The bytes one message takes in a PUBLISH body; measured by the sending thread, so the network thread
     * does not encode header keys to measure them.
     */
    public static int encodedMessageBytes(List<MessageHeader> headers, byte[] payload) {
        int bytes = MESSAGE_OVERHEAD_BYTES + payload.length;
        for (MessageHeader header : headers) {
            // Measured as the frame writes it (ByteBufUtil.writeUtf8): String.getBytes counts a malformed key (a lone
            // surrogate) differently, and the publish window would lose the difference on every such message.
            bytes += 2 + ByteBufUtil.utf8Bytes(header.key()) + 4 + header.value().length;
        }
        return bytes;
    }

    /**
     * The headers and payload of a message of {@code encodedMessageBytes} ({@link #encodedMessageBytes}): what it takes
     * from a publish window that counts headers, as the broker counts it (PublishFrame.messageBytes).
     */
    public static int headersAndPayloadBytes(int encodedMessageBytes) {
        return encodedMessageBytes - MESSAGE_OVERHEAD_BYTES;
    }
}
