package io.sluice.protocol;

import io.netty.handler.codec.DecoderException;

import java.util.Objects;

/**
 * Bad input on the wire: a frame that breaks the layout, a limit or the versioning rules.
 *
 * <p>It is the only exception {@link FrameDecoder} lets out for bad input. It extends Netty's
 * {@link DecoderException} so that the pipeline passes it to {@code exceptionCaught} unwrapped. The message
 * names the field, the value and the limit it broke, and is safe to send to the peer in an ERROR or CLOSE
 * frame; it never carries a stack trace onto the wire.
 */
public final class ProtocolException extends DecoderException {
    private static final long serialVersionUID = 1L;

    private final ErrorCode errorCode;

    public ProtocolException(ErrorCode errorCode, String message) {
        super(message);
        this.errorCode = Objects.requireNonNull(errorCode, "errorCode");
    }

    public ErrorCode errorCode() {
        return errorCode;
    }
}
