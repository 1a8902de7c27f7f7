package io.steelyard.registry.internal;

import java.net.Socket;
import java.security.Principal;
import java.security.PrivateKey;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import javax.annotation.Nullable;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.X509ExtendedKeyManager;
import javax.net.ssl.X509ExtendedTrustManager;

/**
 * The JSSE side of {@link TlsFiles}: a key manager and a trust manager that serve each TLS
 * handshake from the files' material current at that moment, on the client side (etcd's clients)
 * and on the server side (a server that checks its clients' certificates). Thread-safe.
 */
final class TlsFilesManagers {

  private TlsFilesManagers() {}

  /**
   * Hands out the certificate and key current at the handshake. The alias names the
   * generation, and {@link TlsFiles} keeps the generation before the one in use, so a handshake
   * that chose an alias just before a reload still gets the matching chain and key, whatever other
   * handshakes chose meanwhile. (A handshake that outlives two reloads, at least {@link
   * TlsFiles#RECHECK} apart, gets null and sends no certificate.)
   */
  static final class KeyManager extends X509ExtendedKeyManager {
    private final TlsFiles files;

    KeyManager(TlsFiles files) {
      this.files = files;
    }

    @Nullable
    private String alias() {
      TlsFiles.Version l = files.current();
      return l == null || l.material().chain() == null ? null : l.alias();
    }

    @Nullable
    private TlsMaterial byAlias(String alias) {
      TlsFiles.Version l = files.byAlias(alias);
      return l == null ? null : l.material();
    }

    @Override
    @Nullable
    public String chooseEngineClientAlias(String[] keyType, Principal[] issuers, SSLEngine engine) {
      return alias();
    }

    @Override
    @Nullable
    public String chooseClientAlias(String[] keyType, Principal[] issuers, Socket socket) {
      return alias();
    }

    @Override
    @Nullable
    public X509Certificate[] getCertificateChain(String alias) {
      TlsMaterial m = byAlias(alias);
      return m == null ? null : m.chain();
    }

    @Override
    @Nullable
    public PrivateKey getPrivateKey(String alias) {
      TlsMaterial m = byAlias(alias);
      return m == null ? null : m.key();
    }

    @Override
    @Nullable
    public String[] getClientAliases(String keyType, Principal[] issuers) {
      String a = alias();
      return a == null ? null : new String[] {a};
    }

    // The server side: the same certificate and key, for a server that serves TLS from files
    // (the xDS control plane's mutual TLS, where the CA file holds the clients' CA).

    @Override
    @Nullable
    public String[] getServerAliases(String keyType, Principal[] issuers) {
      String a = alias();
      return a == null ? null : new String[] {a};
    }

    @Override
    @Nullable
    public String chooseServerAlias(String keyType, Principal[] issuers, Socket socket) {
      return alias();
    }

    @Override
    @Nullable
    public String chooseEngineServerAlias(String keyType, Principal[] issuers, SSLEngine engine) {
      return alias();
    }
  }

  /** Checks the peer's certificate against the CA certificates current at the handshake. */
  static final class TrustManager extends X509ExtendedTrustManager {
    private final TlsFiles files;

    TrustManager(TlsFiles files) {
      this.files = files;
    }

    private X509ExtendedTrustManager delegate() throws CertificateException {
      TlsFiles.Version l = files.current();
      if (l == null) {
        throw new CertificateException("no usable CA certificate: " + files.problem());
      }
      X509ExtendedTrustManager trust = l.material().trustManager();
      if (trust == null) {
        throw new CertificateException("no CA file to check a peer's certificate against: " + files);
      }
      return trust;
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine)
        throws CertificateException {
      delegate().checkServerTrusted(chain, authType, engine);
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket)
        throws CertificateException {
      delegate().checkServerTrusted(chain, authType, socket);
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType)
        throws CertificateException {
      delegate().checkServerTrusted(chain, authType);
    }

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine)
        throws CertificateException {
      delegate().checkClientTrusted(chain, authType, engine);
    }

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket)
        throws CertificateException {
      delegate().checkClientTrusted(chain, authType, socket);
    }

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType)
        throws CertificateException {
      delegate().checkClientTrusted(chain, authType);
    }

    @Override
    public X509Certificate[] getAcceptedIssuers() {
      TlsFiles.Version l = files.current();
      X509ExtendedTrustManager trust = l == null ? null : l.material().trustManager();
      return trust == null ? new X509Certificate[0] : trust.getAcceptedIssuers();
    }
  }
}
