package io.sluice.broker;

import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.HeartbeatFrame;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.TxAbortedFrame;
import io.sluice.protocol.TxBeginFrame;
import io.sluice.protocol.TxCommitFrame;
import io.sluice.protocol.TxRollbackFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static io.sluice.broker.TransactionFrames.count;
import static io.sluice.broker.TransactionFrames.declare;
import static io.sluice.broker.TransactionFrames.txPublish;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * TX_BEGIN under the id of a transaction still on the connection that can no longer be rolled back (its TX_COMMIT
 * passed, or the broker rolled it back and its client has not ended it yet) is refused with a code and a sentence,
 * ERROR TRANSACTION_ID_IN_USE to no request, and changes nothing of that transaction. Before, it was not answered at
 * all (the rollback it asked for did nothing), and after a TX_COMMIT whose stagings were still under way it rolled
 * the committing transaction back.
 */
class TransactionIdReusedTest {
    @TempDir
    Path dir;

    @Test
    void aTxBeginReusingTheIdOfATransactionTheBrokerRolledBackIsRefusedWithASentence() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of()); RawClient c = RawClient.connected(broker.port())) {
            c.send(new TxBeginFrame(1, 0));
            txPublish(c, 1, "nosuch", "x");
            assertEquals(ErrorCode.TRANSACTION_ABORTED, c.expect(TxAbortedFrame.class).errorCode());

            c.send(new TxBeginFrame(1, 0));
            c.send(new TxRollbackFrame(5, 1));
            ErrorFrame refused = c.expect(ErrorFrame.class);
            assertEquals(0, refused.requestId());
            assertEquals(ErrorCode.TRANSACTION_ID_IN_USE, refused.errorCode());
            assertTrue(refused.message().contains("TX_BEGIN reused id 1"), refused.message());
            assertEquals(5, c.expect(OkFrame.class).requestId(), "the rollback ends the transaction the broker rolled back");
        }
    }

    @Test
    void aTxBeginReusingTheIdOfACommittingTransactionIsRefusedAndTheCommitGoesAhead() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of()); RawClient c = RawClient.connected(broker.port())) {
            declare(c, "invoices");
            c.send(new TxBeginFrame(1, 0));
            txPublish(c, 1, "invoices", "i1");
            c.send(new TxCommitFrame(9, 1));
            c.send(new TxBeginFrame(1, 0));

            List<String> answers = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                Object frame = next(c);
                if (frame instanceof ErrorFrame e) {
                    answers.add("ERROR " + e.requestId() + " " + e.errorCode());
                } else if (frame instanceof OkFrame ok) {
                    answers.add("OK " + ok.requestId());
                } else {
                    answers.add(String.valueOf(frame));
                }
            }
            answers.sort(null);
            assertEquals(List.of("ERROR 0 TRANSACTION_ID_IN_USE", "OK 9"), answers);
            assertEquals(1, count(c, "invoices"));
        }
    }

    /** The next frame but heartbeats, within 10 s. */
    private static Object next(RawClient c) throws InterruptedException {
        while (true) {
            Object o = c.received.poll(10, TimeUnit.SECONDS);
            if (!(o instanceof HeartbeatFrame)) {
                return o;
            }
        }
    }
}
