package io.sluice.client;

import io.netty.buffer.ByteBufAllocator;
import io.sluice.client.internal.Backoff;
import io.sluice.client.internal.IdRanges;
import io.sluice.client.internal.OutgoingHeaders;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.MessageHeader;
import io.sluice.protocol.PublishFrame;
import io.sluice.protocol.PublishFrameBuilder;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

class InternalHelpersTest {
    @Test
    void shouldMergeIdsIntoFewestRanges() {
        long[] ids = {5, 1, 2, 3, 9, 3, 10, 7};
        assertEquals(List.of(new IdRange(1, 3), new IdRange(5, 5), new IdRange(7, 7), new IdRange(9, 10)),
                IdRanges.of(ids, ids.length));
        assertEquals(List.of(), IdRanges.of(new long[0], 0));
    }

    @Test
    void shouldDoubleBackoffUpToTheMaximumAndResetAfterSuccess() {
        Backoff backoff = new Backoff(100, 1000, 2.0, 0.0, () -> 0.5);
        assertEquals(List.of(100L, 200L, 400L, 800L, 1000L, 1000L), List.of(backoff.nextDelayMillis(),
                backoff.nextDelayMillis(), backoff.nextDelayMillis(), backoff.nextDelayMillis(),
                backoff.nextDelayMillis(), backoff.nextDelayMillis()));
        backoff.reset();
        assertEquals(100L, backoff.nextDelayMillis());
        Backoff jittered = new Backoff(100, 1000, 2.0, 0.2, () -> 0.0);
        assertEquals(80L, jittered.nextDelayMillis());
    }

    /**
     * What the client takes from a publish window that counts headers is what the broker reads from the frame, also for
     * a malformed key (a lone surrogate, which String.getBytes and the frame's encoder count apart): else the window
     * shrank by the difference on every such message, for the life of the connection.
     */
    @Test
    void shouldMeasureAMessageAsItsFrameCarriesIt() {
        for (String key : List.of("h", "\u00e9t\u00e9", "\uD800\u00e9", "\uDC00")) {
            List<MessageHeader> headers = List.of(new MessageHeader(key, new byte[5]));
            byte[] payload = new byte[3];
            PublishFrame frame = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, "q").add(1, 1, headers, payload).build();
            try {
                assertEquals(frame.messageBytes(), OutgoingHeaders.headersAndPayloadBytes(OutgoingHeaders.encodedMessageBytes(headers, payload)),
                        "key " + key);
            } finally {
                frame.release();
            }
        }
    }
}
