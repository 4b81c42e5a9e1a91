/**
 * Machinery behind the public client API, not for applications: reconnect backoff, id-range merging, the
 * serial dispatch of handler calls, the sizes of outgoing headers and thread naming. Nothing here touches the network directly.
 */
package io.sluice.client.internal;
