package io.sluice.client;

/**
 * Receives the messages of a push subscription, one at a time and in delivery order, on a client dispatch
 * thread, or on the network thread with {@link ConnectionOptions#callbacksOnNetworkThread()} (then it must
 * not block). The handler settles each message with {@link Message#ack()} or {@link Message#nack}; a handler
 * that throws leaves the message unsettled, and the exception is logged.
 */
@FunctionalInterface
public interface MessageHandler {
    void onMessage(Message message) throws Exception;
}
