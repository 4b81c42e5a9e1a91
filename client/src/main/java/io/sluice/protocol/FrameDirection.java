package io.sluice.protocol;

/** Which peer may send a frame type; a frame sent the wrong way is answered with UNEXPECTED_FRAME. */
public enum FrameDirection {
    CLIENT_TO_BROKER,
    BROKER_TO_CLIENT,
    BOTH
}
