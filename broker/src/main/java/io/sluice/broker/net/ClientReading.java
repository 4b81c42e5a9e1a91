package io.sluice.broker.net;

import io.netty.channel.Channel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.epoll.EpollTcpInfo;

/**
 * Whether the client of a connection reads what the broker writes, asked of the kernel's TCP state: the connection sent
 * the client data and the client acknowledged some, both within a period. Data goes out only as the client's receive
 * window opens, which it does only as the client reads; a client that does not read gets only window probes, which carry
 * no data, and one that is gone acknowledges nothing. The connection's outbound buffer cannot tell: the kernel's send
 * queue (megabytes, tuned by the kernel) takes more from it only once the client has read half of that queue.
 *
 * <p>Only the epoll transport can ask (the broker's on Linux); elsewhere the answer is false, which keeps the rules that
 * ask it as they were without it. Threads: the connection's event loop (one system call each time).
 */
final class ClientReading {
    private ClientReading() {
    }

    /** True if, within the last {@code millis}, {@code channel}'s socket sent data that its client then acknowledged. */
    static boolean within(Channel channel, long millis) {
        if (!(channel instanceof EpollSocketChannel socket) || !socket.isActive()) {
            return false;
        }
        EpollTcpInfo info = socket.tcpInfo();
        return info.lastDataSent() < millis && info.lastAckRecv() < millis;
    }
}
