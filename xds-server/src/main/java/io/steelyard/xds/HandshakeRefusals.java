package io.steelyard.xds;

import static java.util.Objects.requireNonNull;

import com.google.common.cache.Cache;
import com.google.common.cache.CacheBuilder;
import io.grpc.ServerCredentials;
import io.grpc.netty.GrpcHttp2ConnectionHandler;
import io.grpc.netty.InternalNettyServerCredentials;
import io.grpc.netty.InternalProtocolNegotiator;
import io.grpc.netty.InternalProtocolNegotiators;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslHandler;
import io.netty.util.AsciiString;
import java.net.SocketAddress;
import javax.annotation.Nullable;
import javax.net.ssl.SSLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Server credentials for gRPC's TLS negotiation that also name each refused handshake: a client
 * without a certificate, with one the CA did not sign, or that speaks plaintext to the TLS port
 * is refused by the TLS engine, and the refusal is logged at WARN once per peer address and
 * reason (and counted as {@code steelyard.xds.refusals{bound=handshake}}), so that a scan or a
 * reconnecting client does not flood the log.
 *
 * <p>gRPC offers no public hook on a failed server handshake; this wraps its own TLS negotiator
 * ({@code InternalProtocolNegotiators.serverTls}) and listens on the handshake of the {@link
 * SslHandler} it installs. Everything else is gRPC's.
 */
final class HandshakeRefusals {

  private static final Logger log = LoggerFactory.getLogger(HandshakeRefusals.class);

  private final XdsMetrics metrics;
  private final Cache<String, Boolean> logged = CacheBuilder.newBuilder().maximumSize(10_000).build();

  HandshakeRefusals(XdsMetrics metrics) {
    this.metrics = requireNonNull(metrics, "metrics");
  }

  /** Server credentials serving TLS with {@code sslContext}, naming refused handshakes. */
  ServerCredentials credentials(SslContext sslContext) {
    InternalProtocolNegotiator.ProtocolNegotiator tls = InternalProtocolNegotiators.serverTls(sslContext);
    return InternalNettyServerCredentials.create(
        new InternalProtocolNegotiator.ProtocolNegotiator() {
          @Override
          public AsciiString scheme() {
            return tls.scheme();
          }

          @Override
          public ChannelHandler newHandler(GrpcHttp2ConnectionHandler grpcHandler) {
            return new Watching(tls.newHandler(grpcHandler));
          }

          @Override
          public void close() {
            tls.close();
          }
        });
  }

  /**
   * Puts gRPC's TLS handler behind itself and, on the first bytes from the client (by then gRPC
   * has installed its {@link SslHandler}), listens on the handshake and steps aside.
   */
  private final class Watching extends ChannelInboundHandlerAdapter {
    private final ChannelHandler tls;

    Watching(ChannelHandler tls) {
      this.tls = tls;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
      ctx.pipeline().addAfter(ctx.name(), null, tls);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      SslHandler ssl = ctx.pipeline().get(SslHandler.class);
      if (ssl != null) {
        ssl.handshakeFuture().addListener(f -> {
          if (!f.isSuccess()) {
            refused(ctx.channel().remoteAddress(), f.cause());
          }
        });
      }
      ctx.pipeline().remove(this);
      ctx.fireChannelRead(msg);
    }
  }

  void refused(@Nullable SocketAddress peer, @Nullable Throwable cause) {
    String host = StreamLimits.peerOf(peer);
    String reason = reason(cause);
    metrics.refused("handshake");
    if (logged.asMap().putIfAbsent(host + '\0' + reason, Boolean.TRUE) == null) {
      log.warn("Refused a TLS handshake from {}: {}", host, reason);
    }
  }

  /** The TLS engine's own words, shortened where they are long and well known. */
  static String reason(@Nullable Throwable cause) {
    Throwable t = cause;
    while (t != null && !(t instanceof SSLException) && t.getCause() != null && t.getCause() != t) {
      t = t.getCause();
    }
    String message = t == null ? "unknown" : String.valueOf(t.getMessage());
    if (message.contains("Empty client certificate chain") || message.contains("certificate_required")) {
      return "no client certificate (the client CA requires one)";
    }
    if (message.contains("PKIX path") || message.contains("unable to find valid certification path")) {
      return "a client certificate the client CA did not sign (" + message + ")";
    }
    if (t instanceof io.netty.handler.ssl.NotSslRecordException) {
      return "not TLS (a plaintext client on the TLS port?)";
    }
    return message;
  }
}
