package io.steelyard.registry.internal;

import static java.util.Objects.requireNonNull;

import com.google.common.annotations.VisibleForTesting;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall.SimpleForwardingClientCall;
import io.grpc.ForwardingClientCallListener.SimpleForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import javax.annotation.Nullable;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLException;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509TrustManager;

/**
 * Names the one TLS misconfiguration gRPC cannot: an endpoint URL whose scheme does not match
 * the port. gRPC reports {@code http://} against a TLS port as "Network closed for unknown
 * reason" and {@code https://} against a plain port as a closed connection, both UNAVAILABLE,
 * which reads as "etcd unreachable". When a call fails that way, this interceptor asks the
 * endpoints which protocol they speak and, if one speaks the other, fails the call with a {@link
 * MismatchException} cause (an {@link SSLException}), which {@link EtcdErrors} classifies as TLS.
 *
 * <p>The probe: to a plain endpoint it sends a TLS ClientHello and reads the first byte of the
 * answer, a TLS record type (22 handshake, 21 alert; RFC 8446 section 5.1) meaning the port speaks
 * TLS; to a TLS endpoint it sends {@code GET /version HTTP/1.0} in clear text, an {@code HTTP/}
 * answer meaning a plain port. A refused connection (etcd down) is never probed. Results are
 * kept per endpoint for {@value #CACHE_SECONDS} s, so an outage costs one probe per endpoint,
 * and the probe runs off the calling thread; the call's failure is delivered once it is done
 * (within {@link #PROBE_TIMEOUT} per endpoint).
 *
 * <p>One instance per jetcd client; thread-safe. No compatibility promise (internal).
 */
public final class SchemeMismatch implements ClientInterceptor {

  static final long CACHE_SECONDS = 10;
  static final Duration PROBE_TIMEOUT = Duration.ofMillis(500);

  private static final byte TLS_HANDSHAKE = 22;
  private static final byte TLS_ALERT = 21;

  private final List<URI> endpoints;
  private final ConcurrentHashMap<URI, Probed> cache = new ConcurrentHashMap<>();

  private record Probed(Optional<String> mismatch, long atNanos) {}

  /** Watches calls to {@code endpoints} ({@code http://} or {@code https://} URLs). */
  public SchemeMismatch(List<URI> endpoints) {
    this.endpoints = List.copyOf(requireNonNull(endpoints, "endpoints"));
  }

  /** The cause a call fails with when its endpoint's scheme does not match its port. */
  public static final class MismatchException extends SSLException {
    private static final long serialVersionUID = 1L;

    public MismatchException(String message) {
      super(message);
    }
  }

  @Override
  public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(
      MethodDescriptor<ReqT, RespT> method, CallOptions callOptions, Channel next) {
    return new SimpleForwardingClientCall<>(next.newCall(method, callOptions)) {
      @Override
      public void start(Listener<RespT> listener, Metadata headers) {
        super.start(
            new SimpleForwardingClientCallListener<>(listener) {
              @Override
              public void onClose(Status status, Metadata trailers) {
                if (!worthProbing(status)) {
                  super.onClose(status, trailers);
                  return;
                }
                // The probe blocks on sockets: never on the caller's (event loop) thread, nor in
                // the common pool (one worker on a 2-core machine): a daemon thread of its own.
                CompletableFuture.supplyAsync(SchemeMismatch.this::mismatch, SchemeMismatch::onProbeThread)
                    .whenComplete(
                        (mismatch, failure) -> {
                          if (mismatch != null && mismatch.isPresent()) {
                            super.onClose(
                                status.withCause(new MismatchException(mismatch.get())), trailers);
                          } else {
                            super.onClose(status, trailers);
                          }
                        });
              }
            },
            headers);
      }
    };
  }

  private static void onProbeThread(Runnable probe) {
    Thread t = new Thread(probe, "steelyard-scheme-probe");
    t.setDaemon(true);
    t.start();
  }

  /** UNAVAILABLE with the connection made but the protocol failing: not a refused connection. */
  private static boolean worthProbing(Status status) {
    if (status.getCode() != Status.Code.UNAVAILABLE) {
      return false;
    }
    for (Throwable t = status.getCause(); t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof ConnectException || t instanceof MismatchException) {
        return false;
      }
      if (t instanceof SSLException) {
        // A real TLS failure (bad certificate, ...) already names itself.
        return false;
      }
    }
    return true;
  }

  /** The first endpoint whose port speaks the other protocol, described; empty if none. */
  Optional<String> mismatch() {
    for (URI endpoint : endpoints) {
      long now = System.nanoTime();
      Probed p = cache.get(endpoint);
      if (p == null || now - p.atNanos() > Duration.ofSeconds(CACHE_SECONDS).toNanos()) {
        p = new Probed(probe(endpoint), now);
        cache.put(endpoint, p);
      }
      if (p.mismatch().isPresent()) {
        return p.mismatch();
      }
    }
    return Optional.empty();
  }

  @VisibleForTesting
  static Optional<String> probe(URI endpoint) {
    InetSocketAddress address = new InetSocketAddress(endpoint.getHost(), endpoint.getPort());
    boolean tls = "https".equals(endpoint.getScheme());
    try (Socket socket = new Socket()) {
      socket.connect(address, (int) PROBE_TIMEOUT.toMillis());
      socket.setSoTimeout((int) PROBE_TIMEOUT.toMillis());
      OutputStream out = socket.getOutputStream();
      InputStream in = socket.getInputStream();
      if (tls) {
        out.write("GET /version HTTP/1.0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
        out.flush();
        byte[] head = in.readNBytes(5);
        if (new String(head, StandardCharsets.US_ASCII).equals("HTTP/")) {
          return Optional.of(
              endpoint + " is a plain-text port, not TLS: use http://"
                  + endpoint.getRawAuthority() + " (or the port etcd serves TLS on)");
        }
      } else {
        out.write(clientHello(endpoint.getHost(), endpoint.getPort()));
        out.flush();
        int first = in.read();
        if (first == TLS_HANDSHAKE || first == TLS_ALERT) {
          return Optional.of(
              endpoint + " is a TLS port: use https://" + endpoint.getRawAuthority()
                  + " and the CA certificate that signed etcd's certificate");
        }
      }
    } catch (IOException | GeneralSecurityException | RuntimeException e) {
      // Unknown: leave the original failure as it is.
    }
    return Optional.empty();
  }

  /** A TLS ClientHello as the JDK would send it; nothing is ever verified or sent after it. */
  private static byte[] clientHello(String host, int port) throws GeneralSecurityException, SSLException {
    SSLContext ctx = SSLContext.getInstance("TLS");
    ctx.init(null, new TrustManager[] {new NoTrust()}, null);
    SSLEngine engine = ctx.createSSLEngine(host, port);
    engine.setUseClientMode(true);
    ByteBuffer out = ByteBuffer.allocate(engine.getSession().getPacketBufferSize());
    engine.wrap(ByteBuffer.allocate(0), out);
    out.flip();
    byte[] bytes = new byte[out.remaining()];
    out.get(bytes);
    return bytes;
  }

  /** The probe never completes a handshake, so it never has to trust anything. */
  private static final class NoTrust implements X509TrustManager {
    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType)
        throws java.security.cert.CertificateException {
      throw new java.security.cert.CertificateException("probe only");
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType)
        throws java.security.cert.CertificateException {
      throw new java.security.cert.CertificateException("probe only");
    }

    @Override
    @Nullable
    public X509Certificate[] getAcceptedIssuers() {
      return new X509Certificate[0];
    }
  }
}
