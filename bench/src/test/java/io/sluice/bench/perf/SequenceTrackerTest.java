package io.sluice.bench.perf;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SequenceTrackerTest {

    @Test
    void shouldCountNothingWhenEveryConfirmedMessageArrivesOnce() {
        SequenceTracker tracker = new SequenceTracker(2);
        for (int p = 0; p < 2; p++) {
            for (long s = 0; s < 100; s++) {
                tracker.confirmed(p, s);
                assertTrue(tracker.received(p, s));
            }
        }
        assertEquals(0, tracker.lost());
        assertEquals(0, tracker.duplicates());
        assertEquals(200, tracker.receivedUnique());
        assertEquals(200, tracker.confirmedCount());
    }

    @Test
    void shouldCountConfirmedButNeverReceivedAsLostPerProducer() {
        SequenceTracker tracker = new SequenceTracker(2);
        for (long s = 0; s < 10; s++) {
            tracker.confirmed(0, s);
            tracker.confirmed(1, s);
        }
        tracker.received(0, 3);
        tracker.received(1, 3);
        tracker.received(1, 4);
        assertEquals(9 + 8, tracker.lost());
    }

    @Test
    void shouldCountEveryRepeatReceiptAsOneDuplicate() {
        SequenceTracker tracker = new SequenceTracker(1);
        tracker.confirmed(0, 7);
        assertTrue(tracker.received(0, 7));
        assertFalse(tracker.received(0, 7));
        assertFalse(tracker.received(0, 7));
        assertEquals(2, tracker.duplicates());
        assertEquals(1, tracker.receivedUnique());
        assertEquals(0, tracker.lost());
    }

    @Test
    void shouldNotCountUnconfirmedMessagesAsLostEvenWhenReceived() {
        SequenceTracker tracker = new SequenceTracker(1);
        tracker.received(0, 5);
        tracker.confirmed(0, 6);
        tracker.confirmed(0, 6);
        assertEquals(1, tracker.confirmedCount());
        assertEquals(1, tracker.lost());
    }

    @Test
    void shouldRejectAProducerIndexOutsideTheRun() {
        SequenceTracker tracker = new SequenceTracker(1);
        assertThrows(IllegalArgumentException.class, () -> tracker.received(3, 0));
    }

    @Test
    void shouldRoundTripProducerSequenceAndSendTimeThroughThePayload() {
        byte[] payload = Payload.create(256, 65_535, Payload.MAX_SEQUENCE, -42L);
        assertEquals(256, payload.length);
        assertEquals(65_535, Payload.producer(payload));
        assertEquals(Payload.MAX_SEQUENCE, Payload.sequence(payload));
        assertEquals(-42L, Payload.sendNanos(payload));
    }
}
