package io.sluice.broker;

import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Message;
import io.sluice.client.ReconnectPolicy;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;

/**
 * A consumer for a child JVM: subscribes to a queue, receives messages without acknowledging any, prints
 * "received N" after each, and waits to be killed. Arguments: port queue.
 */
public final class ChildConsumerMain {
    private ChildConsumerMain() {
    }

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        String queue = args[1];
        Connection connection = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(port)
                .reconnectPolicy(ReconnectPolicy.DISABLED).build());
        Consumer consumer = connection.subscribe(queue, ConsumerOptions.DEFAULT);
        System.out.println("subscribed");
        long received = 0;
        while (true) {
            Message m = consumer.receive(Duration.ofSeconds(1));
            if (m != null) {
                received++;
                System.out.println("received " + received);
            }
            if (received > 0 && m == null) {
                new CountDownLatch(1).await();
            }
        }
    }
}
