package io.steelyard.registry.internal;

import static java.util.Objects.requireNonNull;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall.SimpleForwardingClientCall;
import io.grpc.ForwardingClientCallListener.SimpleForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.netty.handler.ssl.SslHandshakeTimeoutException;
import java.net.ConnectException;
import java.security.cert.CertPathValidatorException;
import java.security.cert.CertificateException;
import javax.annotation.Nullable;
import javax.net.ssl.SSLException;

/**
 * Names a client certificate etcd refuses. etcd checks the client certificate after the client
 * has finished its side of a TLS 1.3 handshake, so gRPC often sees only a closed connection
 * ("Network closed for unknown reason", UNAVAILABLE, no cause), which reads as "etcd is away".
 * When a call fails UNAVAILABLE, not with a refused connection, and either the failure carries
 * a TLS alert from etcd or the client certificate on disk is outside its validity, this
 * interceptor fails the call with a {@link RefusedException} cause naming the file and its
 * not-after, which {@link EtcdErrors} classifies as TLS.
 *
 * <p>A failure of this client's own check of etcd's certificate (an untrusted or expired server
 * certificate, a hostname mismatch) is left alone: {@link EtcdErrors} names it already. Only the
 * current files are looked at ({@link TlsFiles}, at most once a second), no I/O otherwise.
 *
 * <p>One instance per jetcd client; thread-safe. No compatibility promise (internal).
 */
public final class ClientCertificateCheck implements ClientInterceptor {

  private final TlsFiles files;

  /** Names refusals of the client certificate in {@code files}. */
  public ClientCertificateCheck(TlsFiles files) {
    this.files = requireNonNull(files, "files");
  }

  /** The cause a call fails with when etcd refused the client certificate. */
  public static final class RefusedException extends SSLException {
    private static final long serialVersionUID = 1L;

    RefusedException(String message, @Nullable Throwable cause) {
      super(message, cause);
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
                super.onClose(named(status), trailers);
              }
            },
            headers);
      }
    };
  }

  /** {@code status}, with a {@link RefusedException} cause when it is a certificate refusal. */
  Status named(Status status) {
    if (status.getCode() != Status.Code.UNAVAILABLE) {
      return status;
    }
    boolean alert = false;
    for (Throwable t = status.getCause(); t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof ConnectException
          || t instanceof SslHandshakeTimeoutException
          || t instanceof RefusedException
          || t instanceof SchemeMismatch.MismatchException
          || t instanceof CertificateException
          || t instanceof CertPathValidatorException) {
        return status; // etcd away, or this client's own verdict on etcd's certificate
      }
      alert |= t instanceof SSLException;
    }
    String certificate = files.describeClientCertificate();
    if (certificate == null || (!alert && files.clientCertificateValidNow())) {
      return status;
    }
    return status.withCause(
        new RefusedException("etcd refused the client certificate " + certificate, status.getCause()));
  }
}
