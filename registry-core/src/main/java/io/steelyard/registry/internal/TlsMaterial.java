package io.steelyard.registry.internal;

import static java.util.Objects.requireNonNull;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.Signature;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.time.Instant;
import java.util.Base64;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.annotation.Nullable;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509ExtendedTrustManager;

/**
 * One consistent set of TLS files read at one moment: the CA certificates to trust and, for
 * mutual TLS, the client certificate chain with its private key (or, for a server that checks
 * no client certificate, the chain and key alone). {@link #parse} accepts it only
 * when every file parses and the key belongs to the certificate, so a half-written or mismatched
 * pair never reaches a handshake.
 *
 * <p>Keys are PKCS#8 PEM ({@code BEGIN PRIVATE KEY}), RSA, EC or Ed25519; what Netty reads
 * without BouncyCastle, and what cert-manager writes with {@code privateKey.encoding: PKCS8}.
 *
 * <p>Immutable and thread-safe.
 */
final class TlsMaterial {

  private static final Pattern PRIVATE_KEY =
      Pattern.compile("-----BEGIN PRIVATE KEY-----([A-Za-z0-9+/=\\s]+)-----END PRIVATE KEY-----");
  private static final byte[] PROBE = "steelyard key check".getBytes(StandardCharsets.US_ASCII);

  private final List<X509Certificate> caCerts;
  @Nullable private final X509Certificate[] chain;
  @Nullable private final PrivateKey key;
  @Nullable private final X509ExtendedTrustManager trustManager;

  private TlsMaterial(
      List<X509Certificate> caCerts,
      @Nullable X509Certificate[] chain,
      @Nullable PrivateKey key,
      @Nullable X509ExtendedTrustManager trustManager) {
    this.caCerts = caCerts;
    this.chain = chain;
    this.key = key;
    this.trustManager = trustManager;
  }

  /** Why a set of files is not (yet) usable; the message names the file. */
  static final class UnusableException extends Exception {
    private static final long serialVersionUID = 1L;

    UnusableException(String message, @Nullable Throwable cause) {
      super(message, cause);
    }
  }

  /**
   * Parses the contents of the CA file (when {@code caPem} is not null) and, when {@code certPem}
   * is not null, of the certificate and key files.
   *
   * @throws UnusableException naming the file at fault and why
   */
  static TlsMaterial parse(
      @Nullable Path caFile, @Nullable byte[] caPem, @Nullable Path certFile, @Nullable byte[] certPem,
      @Nullable Path keyFile, @Nullable byte[] keyPem)
      throws UnusableException {
    List<X509Certificate> ca = caPem == null ? List.of() : certificates(requireNonNull(caFile), caPem);
    X509Certificate[] chain = null;
    PrivateKey key = null;
    if (certPem != null) {
      chain = certificates(requireNonNull(certFile), certPem).toArray(X509Certificate[]::new);
      key = privateKey(requireNonNull(keyFile), requireNonNull(keyPem));
      if (!belongTogether(key, chain[0].getPublicKey())) {
        throw new UnusableException(
            keyFile + " is not the key of the certificate in " + certFile, null);
      }
    }
    return new TlsMaterial(ca, chain, key, caPem == null ? null : trustManager(caFile, ca));
  }

  List<X509Certificate> caCerts() {
    return caCerts;
  }

  /** The client certificate chain, leaf first, or null without mutual TLS. */
  @Nullable
  X509Certificate[] chain() {
    return chain;
  }

  @Nullable
  PrivateKey key() {
    return key;
  }

  /**
   * Trusts exactly {@link #caCerts()}, with the JDK's checks (and its hostname check); null
   * without a CA file.
   */
  @Nullable
  X509ExtendedTrustManager trustManager() {
    return trustManager;
  }

  /** The client certificate's not-after, or null without mutual TLS. */
  @Nullable
  Instant clientNotAfter() {
    return chain == null ? null : chain[0].getNotAfter().toInstant();
  }

  /** The earliest not-after of the CA certificates, or null without a CA file. */
  @Nullable
  Instant caNotAfter() {
    return caCerts.stream().map(c -> c.getNotAfter().toInstant()).min(Instant::compareTo).orElse(null);
  }

  private static List<X509Certificate> certificates(Path file, byte[] pem) throws UnusableException {
    try {
      List<X509Certificate> certs =
          CertificateFactory.getInstance("X.509").generateCertificates(new ByteArrayInputStream(pem))
              .stream()
              .map(X509Certificate.class::cast)
              .toList();
      if (certs.isEmpty()) {
        throw new UnusableException(file + " holds no PEM certificate", null);
      }
      return certs;
    } catch (CertificateException | RuntimeException e) {
      throw new UnusableException(file + " is not a PEM certificate (" + e.getMessage() + ")", e);
    }
  }

  private static PrivateKey privateKey(Path file, byte[] pem) throws UnusableException {
    Matcher m = PRIVATE_KEY.matcher(new String(pem, StandardCharsets.US_ASCII));
    if (!m.find()) {
      throw new UnusableException(
          file + " holds no complete PKCS#8 PEM key (-----BEGIN PRIVATE KEY----- ... END)", null);
    }
    byte[] der;
    try {
      der = Base64.getMimeDecoder().decode(m.group(1));
    } catch (IllegalArgumentException e) {
      throw new UnusableException(file + " is not valid base64 PEM", e);
    }
    for (String algorithm : new String[] {"EC", "RSA", "Ed25519"}) {
      try {
        return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
      } catch (GeneralSecurityException e) {
        // try the next algorithm
      }
    }
    throw new UnusableException(file + " is not an RSA, EC or Ed25519 PKCS#8 key", null);
  }

  /** Signs with the key and verifies with the certificate's public key. */
  private static boolean belongTogether(PrivateKey key, PublicKey pub) {
    String algorithm =
        switch (key.getAlgorithm()) {
          case "EC" -> "SHA256withECDSA";
          case "RSA" -> "SHA256withRSA";
          default -> key.getAlgorithm(); // Ed25519, EdDSA
        };
    try {
      Signature s = Signature.getInstance(algorithm);
      s.initSign(key);
      s.update(PROBE);
      byte[] signature = s.sign();
      Signature v = Signature.getInstance(algorithm);
      v.initVerify(pub);
      v.update(PROBE);
      return v.verify(signature);
    } catch (GeneralSecurityException | RuntimeException e) {
      return false; // different algorithms: not a pair
    }
  }

  private static X509ExtendedTrustManager trustManager(Path caFile, List<X509Certificate> ca)
      throws UnusableException {
    try {
      KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
      store.load(null, null);
      for (int i = 0; i < ca.size(); i++) {
        store.setCertificateEntry("ca-" + i, ca.get(i));
      }
      TrustManagerFactory f = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      f.init(store);
      for (TrustManager tm : f.getTrustManagers()) {
        if (tm instanceof X509ExtendedTrustManager x) {
          return x;
        }
      }
      throw new UnusableException("the JDK offers no X.509 trust manager for " + caFile, null);
    } catch (GeneralSecurityException | java.io.IOException e) {
      throw new UnusableException("cannot trust the certificates in " + caFile + " (" + e + ")", e);
    }
  }
}
