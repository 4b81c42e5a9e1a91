/**
 * Machinery behind the public client API, not for applications: reconnect backoff, id-range merging, the
 * serial dispatch of handler calls, the sizes of outgoing headers, thread naming, and what work on the network thread
 * owes when it throws ({@link io.sluice.client.internal.OwingTask}). Nothing here touches the network directly.
 */
package io.sluice.client.internal;
