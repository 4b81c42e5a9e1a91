package io.sluice.client.internal;

import io.netty.buffer.ByteBufAllocator;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslProvider;

import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.TrustManagerFactory;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;

/**
 * The client side of TLS: a JDK-provider {@link SslContext} limited to TLSv1.3 and TLSv1.2, and per
 * connection an {@link SslHandler} whose engine knows the peer host, so that with hostname verification
 * (endpoint identification "HTTPS") the broker's certificate must name that host. Immutable; thread-safe.
 */
public final class ClientTls {
    private static final String[] PROTOCOLS = {"TLSv1.3", "TLSv1.2"};

    private final SslContext context;
    private final boolean hostnameVerification;

    private ClientTls(SslContext context, boolean hostnameVerification) {
        this.context = context;
        this.hostnameVerification = hostnameVerification;
    }

    /**
     * Builds the context; throws IllegalArgumentException naming the file that cannot be used.
     *
     * @param trustCertificates PEM CAs, or null
     * @param trustStore        PKCS12/JKS trust store, or null (neither: the JDK's default trust)
     * @param clientCertificate PEM chain for mutual TLS, or null
     * @param clientKey         PEM PKCS#8 key for mutual TLS, or null
     */
    public static ClientTls create(Path trustCertificates, Path trustStore, char[] trustStorePassword,
                                   Path clientCertificate, Path clientKey, boolean hostnameVerification) {
        // Netty 4.2 verifies host names by default; set it either way so the option means what it says.
        SslContextBuilder builder = SslContextBuilder.forClient().sslProvider(SslProvider.JDK).protocols(PROTOCOLS)
                .endpointIdentificationAlgorithm(hostnameVerification ? "HTTPS" : null);
        try {
            if (trustCertificates != null) {
                builder.trustManager(trustCertificates.toFile());
            } else if (trustStore != null) {
                KeyStore store = KeyStore.getInstance(trustStore.toString().endsWith(".jks") ? "JKS" : "PKCS12");
                try (InputStream in = Files.newInputStream(trustStore)) {
                    store.load(in, trustStorePassword);
                }
                TrustManagerFactory factory = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
                factory.init(store);
                builder.trustManager(factory);
            }
            if (clientCertificate != null) {
                builder.keyManager(clientCertificate.toFile(), clientKey.toFile());
            }
            return new ClientTls(builder.build(), hostnameVerification);
        } catch (IOException | GeneralSecurityException | IllegalArgumentException e) {
            throw new IllegalArgumentException("invalid TLS options (trustCertificates " + trustCertificates + ", trustStore "
                    + trustStore + ", clientCertificate " + clientCertificate + ", clientKey " + clientKey + "): " + e.getMessage(), e);
        }
    }

    /** A handler for one connection to {@code host:port}. */
    public SslHandler newHandler(ByteBufAllocator alloc, String host, int port) {
        SslHandler handler = context.newHandler(alloc, host, port);
        if (hostnameVerification) {
            SSLEngine engine = handler.engine();
            SSLParameters parameters = engine.getSSLParameters();
            parameters.setEndpointIdentificationAlgorithm("HTTPS");
            engine.setSSLParameters(parameters);
        }
        return handler;
    }
}
