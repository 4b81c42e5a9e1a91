package io.sluice.broker.security;

import io.netty.handler.ssl.JdkSslContext;
import javax.net.ssl.SSLContext;

import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslProvider;
import io.sluice.broker.config.BrokerConfig;

import javax.net.ssl.SSLException;
import java.io.File;

/**
 * Builds the listener's {@link SslContext} from {@code tls.*}: the JDK provider (no tcnative),
 * TLSv1.3 and TLSv1.2 only, and the client-certificate policy of {@code tls.client-auth}.
 */
public final class TlsContexts {
    public static final String[] PROTOCOLS = {"TLSv1.3", "TLSv1.2"};

    private TlsContexts() {
    }

    /**
     * The JDK {@link SSLContext} for the metrics and admin HTTPS port ({@code metrics.tls}): the same
     * certificate and key as the listener, no client certificates.
     */
    public static SSLContext httpServer(BrokerConfig.Tls tls) {
        try {
            SslContext netty = SslContextBuilder.forServer(new File(tls.certificate), new File(tls.privateKey))
                    .sslProvider(SslProvider.JDK)
                    .protocols(PROTOCOLS)
                    .build();
            return ((JdkSslContext) netty).context();
        } catch (SSLException | IllegalArgumentException e) {
            throw new IllegalStateException("metrics.tls: cannot use certificate " + tls.certificate + ", private key "
                    + tls.privateKey + ": " + e.getMessage(), e);
        }
    }

    /**
     * The HTTPS settings of a JDK {@code HttpsServer} on {@code context}: {@link #PROTOCOLS} only, and a client
     * certificate required when {@code needClientAuth}.
     */
    public static com.sun.net.httpserver.HttpsConfigurator httpsConfigurator(SSLContext context, boolean needClientAuth) {
        return new com.sun.net.httpserver.HttpsConfigurator(context) {
            @Override
            public void configure(com.sun.net.httpserver.HttpsParameters params) {
                javax.net.ssl.SSLParameters parameters = context.getDefaultSSLParameters();
                parameters.setProtocols(PROTOCOLS);
                parameters.setNeedClientAuth(needClientAuth);
                params.setSSLParameters(parameters);
            }
        };
    }

    /** Null when TLS is off; throws IllegalStateException naming the file when a PEM cannot be used. */
    public static SslContext server(BrokerConfig.Tls tls) {
        if (!tls.enabled) {
            return null;
        }
        try {
            SslContextBuilder builder = SslContextBuilder.forServer(new File(tls.certificate), new File(tls.privateKey))
                    .sslProvider(SslProvider.JDK)
                    .protocols(PROTOCOLS);
            String clientAuth = tls.clientAuth == null ? "none" : tls.clientAuth;
            if (!clientAuth.equals("none")) {
                builder.trustManager(new File(tls.clientCa))
                        .clientAuth(clientAuth.equals("require") ? ClientAuth.REQUIRE : ClientAuth.OPTIONAL);
            }
            return builder.build();
        } catch (SSLException | IllegalArgumentException e) {
            throw new IllegalStateException("tls: cannot use certificate " + tls.certificate + ", private key " + tls.privateKey
                    + (tls.clientCa == null || tls.clientCa.isEmpty() ? "" : ", client CA " + tls.clientCa) + ": " + e.getMessage(), e);
        }
    }
}
