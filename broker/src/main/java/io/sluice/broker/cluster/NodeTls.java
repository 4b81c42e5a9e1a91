package io.sluice.broker.cluster;

import io.netty.handler.ssl.JdkSslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslProvider;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.security.TlsContexts;
import org.apache.ratis.conf.Parameters;
import org.apache.ratis.grpc.GrpcConfigKeys;
import org.apache.ratis.grpc.GrpcTlsConfig;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import java.io.File;

/**
 * Mutual TLS between the nodes of a cluster ({@code cluster.tls}, docs/security.md, "Between the nodes"): the
 * same certificate, key and CA serve Ratis's gRPC port (server and client side) and the snapshot port (the
 * server requires a client certificate; the fetching follower presents its own and checks that the server's
 * names the host it dialled). A peer without a certificate the CA signed gets no TLS session, so no Raft RPC
 * and no snapshot.
 */
final class NodeTls {
    private final BrokerConfig.ClusterTls tls;

    private NodeTls(BrokerConfig.ClusterTls tls) {
        this.tls = tls;
    }

    /** Null when {@code cluster.tls.enabled} is false. */
    static NodeTls of(BrokerConfig.ClusterTls tls) {
        return tls.enabled ? new NodeTls(tls) : null;
    }

    /** Ratis's parameters with mutual TLS on its server, admin and client channels. */
    Parameters raftParameters() {
        GrpcTlsConfig config = new GrpcTlsConfig(new File(tls.privateKey), new File(tls.certificate), new File(tls.ca), true);
        Parameters parameters = new Parameters();
        GrpcConfigKeys.Server.setTlsConf(parameters, config);
        GrpcConfigKeys.Admin.setTlsConf(parameters, config);
        GrpcConfigKeys.Client.setTlsConf(parameters, config);
        return parameters;
    }

    /** For the snapshot server: this node's certificate, and the CA that must have signed the client's. */
    SSLContext serverContext() {
        try {
            return ((JdkSslContext) SslContextBuilder.forServer(new File(tls.certificate), new File(tls.privateKey))
                    .trustManager(new File(tls.ca)).sslProvider(SslProvider.JDK).protocols(TlsContexts.PROTOCOLS).build()).context();
        } catch (SSLException | IllegalArgumentException e) {
            throw new IllegalStateException(describe(e), e);
        }
    }

    /** For a follower fetching a snapshot: its certificate to present, and the CA that must have signed the server's. */
    SSLContext clientContext() {
        try {
            return ((JdkSslContext) SslContextBuilder.forClient().keyManager(new File(tls.certificate), new File(tls.privateKey))
                    .trustManager(new File(tls.ca)).sslProvider(SslProvider.JDK).protocols(TlsContexts.PROTOCOLS).build()).context();
        } catch (SSLException | IllegalArgumentException e) {
            throw new IllegalStateException(describe(e), e);
        }
    }

    private String describe(Exception e) {
        return "cluster.tls: cannot use certificate " + tls.certificate + ", private key " + tls.privateKey + ", CA " + tls.ca
                + ": " + e.getMessage();
    }
}
