/**
 * The broker's network edge. A connection's pipeline ends in the {@link io.sluice.broker.net.HandshakeHandler}
 * until HELLO_OK, then in the {@link io.sluice.broker.net.ClientSessionAdapter}, which turns each frame into a
 * call on the connection's {@link io.sluice.broker.net.ClientSession}; queues answer through the
 * {@link io.sluice.broker.net.ClientSessionProxy}, the connection's producer and consumer link, which turns
 * their calls back into frames, one loop task per drain. All of it runs on the connection's event loop except
 * the proxy's links, which any queue's executor may call. docs/broker-core.md has the whole picture.
 */
package io.sluice.broker.net;
