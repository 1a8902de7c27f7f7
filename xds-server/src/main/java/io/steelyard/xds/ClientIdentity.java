package io.steelyard.xds;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import java.security.cert.Certificate;
import java.security.cert.CertificateParsingException;
import java.security.cert.X509Certificate;
import java.util.Collection;
import java.util.List;
import javax.annotation.Nullable;
import javax.naming.InvalidNameException;
import javax.naming.ldap.LdapName;
import javax.naming.ldap.Rdn;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;

/**
 * Who a client is, from the certificate it presented in the mutual-TLS handshake: its URI SAN
 * (a SPIFFE ID such as {@code spiffe://example/greeter-client}), else its DNS SAN, else its
 * subject's common name. A client of a plaintext listener has no identity.
 *
 * <p>As an interceptor it puts the identity in the call's {@link Context} ({@link #current()}),
 * where the xDS stream's requests are handled.
 */
final class ClientIdentity implements ServerInterceptor {

  private static final Context.Key<String> KEY = Context.key("steelyard-xds-client-identity");
  private static final int DNS = 2;
  private static final int URI = 6;

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(
      ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
    String identity = of(call.getAttributes().get(Grpc.TRANSPORT_ATTR_SSL_SESSION));
    if (identity == null) {
      return next.startCall(call, headers);
    }
    return Contexts.interceptCall(Context.current().withValue(KEY, identity), call, headers, next);
  }

  /** The identity of the client whose call is being handled, or null without one. */
  @Nullable
  static String current() {
    return KEY.get();
  }

  /** The identity in a TLS session's peer certificate, or null without a certificate. */
  @Nullable
  static String of(@Nullable SSLSession session) {
    if (session == null) {
      return null;
    }
    Certificate[] chain;
    try {
      chain = session.getPeerCertificates();
    } catch (SSLPeerUnverifiedException e) {
      return null;
    }
    return chain.length > 0 && chain[0] instanceof X509Certificate leaf ? of(leaf) : null;
  }

  /** URI SAN, else DNS SAN, else subject CN; null when the certificate names none. */
  @Nullable
  static String of(X509Certificate certificate) {
    Collection<List<?>> names;
    try {
      names = certificate.getSubjectAlternativeNames();
    } catch (CertificateParsingException e) {
      names = null;
    }
    String dns = null;
    if (names != null) {
      for (List<?> name : names) {
        int type = (Integer) name.get(0);
        if (type == URI) {
          return (String) name.get(1);
        }
        if (type == DNS && dns == null) {
          dns = (String) name.get(1);
        }
      }
    }
    return dns != null ? dns : commonName(certificate);
  }

  @Nullable
  private static String commonName(X509Certificate certificate) {
    try {
      List<Rdn> rdns = new LdapName(certificate.getSubjectX500Principal().getName()).getRdns();
      for (int i = rdns.size() - 1; i >= 0; i--) {
        if (rdns.get(i).getType().equalsIgnoreCase("CN")) {
          return rdns.get(i).getValue().toString();
        }
      }
    } catch (InvalidNameException e) {
      return null;
    }
    return null;
  }
}
