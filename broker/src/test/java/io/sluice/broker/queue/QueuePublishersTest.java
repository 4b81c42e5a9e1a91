package io.sluice.broker.queue;

import io.sluice.protocol.FlowFrame;
import io.sluice.protocol.FlowState;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The connections a queue tells of its flow changes. Found by a review: a closed connection was forgotten only when the
 * queue's flow state changed or its producers were listed (a metrics scrape), so a queue that stays FREE, with no
 * scrape, kept every connection that ever published to it, each with its channel and pipeline: a client that connects,
 * publishes and closes, over and over, grew the broker's heap without bound.
 */
class QueuePublishersTest {
    @Test
    void connectionsThatPublishedAndClosedAreNotKeptWhileTheQueueStaysFree() {
        QueuePublishers publishers = new QueuePublishers("q");
        FakeConnection staying = new FakeConnection("staying");
        publishers.add(staying, FlowState.FREE, "");
        for (int i = 0; i < 10_000; i++) {
            FakeConnection passing = new FakeConnection("passing-" + i);
            publishers.add(passing, FlowState.FREE, "");
            passing.close();
        }
        assertTrue(publishers.size() <= 64, "10,000 closed connections, one open, and " + publishers.size() + " kept");

        publishers.tell(FlowState.BLOCKED, "full");
        assertEquals(List.of(new FlowFrame("q", FlowState.BLOCKED, "full")), staying.all(FlowFrame.class),
                "the open connection is still told");
    }

    @Test
    void openConnectionsAreAllKeptAndTold() {
        QueuePublishers publishers = new QueuePublishers("q");
        List<FakeConnection> open = new ArrayList<>();
        for (int i = 0; i < 1_000; i++) {
            FakeConnection c = new FakeConnection("open-" + i);
            open.add(c);
            publishers.add(c, FlowState.FREE, "");
            if (i % 2 == 0) {
                new FakeConnection("closed-" + i).close(); // not added: closed before it published
            }
        }
        assertEquals(1_000, publishers.size());
        publishers.tell(FlowState.SLOWED, "soft");
        for (FakeConnection c : open) {
            assertEquals(1, c.all(FlowFrame.class).size(), c.id());
        }
    }
}
