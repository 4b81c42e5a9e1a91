/**
 * The Sluice wire protocol, shared by the broker and the client: length-prefixed binary frames over TCP.
 *
 * <p>{@link io.sluice.protocol.Frame} draws the frame header; each {@code *Frame} class draws its body and
 * {@code docs/protocol.md} documents every byte. {@link io.sluice.protocol.FrameDecoder} and
 * {@link io.sluice.protocol.FrameEncoder} are the Netty pipeline stages; {@link io.sluice.protocol.ErrorCode}
 * lists every error the peers exchange. Publishing and delivering are batched ({@link
 * io.sluice.protocol.PublishFrame}, {@link io.sluice.protocol.DeliverFrame}) and settled by ranges
 * ({@link io.sluice.protocol.IdRange}), so one frame carries many messages and one small frame settles them.
 * The package knows nothing of queues, storage or connection state: it only reads and writes bytes.
 */
package io.sluice.protocol;
