package io.sluice.broker.queue;

import io.sluice.broker.error.Sentences;
import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.DeliverFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.FlowFrame;
import io.sluice.protocol.FlowState;
import io.sluice.protocol.Frame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.PublishCreditFrame;
import io.sluice.protocol.PublishErrorFrame;

import java.util.List;

/**
 * A {@link ProducerLink} and {@link ConsumerLink} whose every call becomes one frame, handed to
 * {@link #write} in call order: the one place that says which frame each call of a queue means.
 * The connection's proxy writes them to the socket; a test's fake keeps them. Thread-safe as far as
 * {@link #write} is.
 */
public abstract class FrameLink implements ProducerLink, ConsumerLink {
    /** Takes the frame over (and with it a DELIVER frame's buffer); from any thread. */
    protected abstract void write(Frame frame);

    @Override
    public void confirm(long producerId, List<IdRange> sequences) {
        write(new ConfirmFrame(producerId, sequences));
    }

    @Override
    public void refuse(long producerId, IdRange sequences, ErrorCode code, String message) {
        write(new PublishErrorFrame(producerId, sequences, code, Sentences.fit(message)));
    }

    /** The frame gives back the window; the {@code heldBytes} are the connection's to count (W2), none of the client's. */
    @Override
    public void publishCredit(int messages, long windowBytes, long heldBytes) {
        write(new PublishCreditFrame(messages, windowBytes));
    }

    @Override
    public void flow(String queue, FlowState state, String reason) {
        write(new FlowFrame(queue, state, reason));
    }

    @Override
    public void deliver(DeliverFrame frame) {
        write(frame);
    }

    @Override
    public void error(ErrorCode code, String message) {
        write(new ErrorFrame(0, code, Sentences.fit(message)));
    }
}
