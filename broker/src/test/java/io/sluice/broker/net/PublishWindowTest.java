package io.sluice.broker.net;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PublishWindowTest {
    @Test
    void shouldBeWithinUpToTheWindowInMessagesAndInBytesAndPastItBeyond() {
        PublishWindow window = new PublishWindow(3, 100, true);
        window.take(3, 100);
        assertTrue(window.within(), "exactly the window");
        window.take(1, 0);
        assertFalse(window.within(), "one message past it");
        window.giveBack(1, 0);
        window.take(0, 1);
        assertFalse(window.within(), "one byte past it");
    }

    @Test
    void shouldBeEmptyOnceEverythingTakenIsGivenBackInAnyPieces() {
        PublishWindow window = new PublishWindow(10, 1000, true);
        window.take(4, 400);
        window.take(6, 700);
        window.giveBack(5, 550);
        assertTrue(window.within());
        window.giveBack(5, 550);
        assertEquals(0, window.messagesOut());
        assertEquals(0, window.bytesOut());
    }

    @Test
    void shouldCountHeadersAndPayloadForAClientGrantedThatAndThePayloadAloneForOneFromBefore() {
        assertEquals(130, new PublishWindow(10, 1000, true).bytesOf(100, 30));
        assertEquals(30, new PublishWindow(10, 1000, false).bytesOf(100, 30));
    }
}
