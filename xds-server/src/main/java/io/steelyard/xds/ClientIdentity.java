package io.steelyard.xds;

import static java.util.Objects.requireNonNull;

import com.google.common.cache.Cache;
import com.google.common.cache.CacheBuilder;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
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
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Who a client is, from the certificate it presented in the mutual-TLS handshake: its URI SAN
 * (a SPIFFE ID such as {@code spiffe://example/greeter-client}), else its DNS SAN, else its
 * subject's common name. A client of a plaintext listener has no identity.
 *
 * <p>As an interceptor it puts the identity in the call's {@link Context} ({@link #current()}),
 * where the xDS stream's requests are handled. Under grants, a client whose certificate names
 * none of the three has no identity a grant could name: least privilege refuses its call with
 * {@code PERMISSION_DENIED} (rather than serve it as a plaintext loopback client is served),
 * logged once per peer address and counted as {@code steelyard.xds.refusals{bound=identity}}.
 */
final class ClientIdentity implements ServerInterceptor {

  private static final Logger log = LoggerFactory.getLogger(ClientIdentity.class);
  private static final Context.Key<String> KEY = Context.key("steelyard-xds-client-identity");
  private static final int DNS = 2;
  private static final int URI = 6;
  static final String NAMELESS =
      "xds: the client certificate names no URI SAN, DNS SAN or subject CN, so no grant of --authorize can name it";

  private final boolean granted;
  private final XdsMetrics metrics;
  /** Peer addresses whose nameless certificate was logged; bounded. */
  private final Cache<String, Boolean> logged = CacheBuilder.newBuilder().maximumSize(10_000).build();

  /** {@code granted}: whether grants decide what each identity reads ({@code --authorize}). */
  ClientIdentity(boolean granted, XdsMetrics metrics) {
    this.granted = granted;
    this.metrics = requireNonNull(metrics, "metrics");
  }

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(
      ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
    SSLSession session = call.getAttributes().get(Grpc.TRANSPORT_ATTR_SSL_SESSION);
    String identity = of(session);
    if (identity == null) {
      if (granted && hasCertificate(session)) {
        refuse(call);
        return new ServerCall.Listener<>() {};
      }
      return next.startCall(call, headers);
    }
    return Contexts.interceptCall(withIdentity(identity), call, headers, next);
  }

  /** The current context with {@code identity} as the client's. */
  static Context withIdentity(String identity) {
    return Context.current().withValue(KEY, identity);
  }

  private void refuse(ServerCall<?, ?> call) {
    metrics.refused("identity");
    String host = StreamLimits.peerOf(call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR));
    if (logged.asMap().putIfAbsent(host, Boolean.TRUE) == null) {
      log.warn("Refused the xDS streams of {}: its client certificate names no URI SAN, DNS SAN or subject CN,"
          + " so no grant of --authorize can name it", host);
    }
    call.close(Status.PERMISSION_DENIED.withDescription(NAMELESS), new Metadata());
  }

  private static boolean hasCertificate(@Nullable SSLSession session) {
    if (session == null) {
      return false;
    }
    try {
      return session.getPeerCertificates().length > 0;
    } catch (SSLPeerUnverifiedException e) {
      return false;
    }
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
