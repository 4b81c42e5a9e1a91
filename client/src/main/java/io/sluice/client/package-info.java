/**
 * The Sluice Java client: {@link io.sluice.client.Connection} connects (and reconnects) to a broker,
 * {@link io.sluice.client.Producer} publishes with confirms, {@link io.sluice.client.Consumer} receives with
 * credit-based flow control and batched acks, {@link io.sluice.client.Transaction} publishes and acknowledges
 * in one commit. Failures surface as {@link io.sluice.client.SluiceException}
 * and its subclasses {@link io.sluice.client.ConnectionLostException} and
 * {@link io.sluice.client.SluiceTimeoutException}. Wire types (queue settings, headers, error codes) come from
 * {@code io.sluice.protocol}.
 */
package io.sluice.client;
