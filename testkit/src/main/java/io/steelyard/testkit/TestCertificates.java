package io.steelyard.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import javax.annotation.Nullable;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509CertificateHolder;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.openssl.jcajce.JcaPKCS8Generator;
import org.bouncycastle.operator.ContentSigner;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * A throw-away PKI for TLS tests, generated at test time (never checked in) into a directory:
 * a CA, a server certificate for etcd, a client certificate, and the bad ones every negative
 * test needs. Keys are EC P-256 in PKCS#8 PEM (what both etcd and Netty read); certificates
 * are PEM.
 *
 * <pre>{@code
 * TestCertificates certs = TestCertificates.generate(tempDir);
 * EtcdCluster etcd = EtcdCluster.builder().mutualTls(certs).build();
 * EtcdConnection.builder().endpoints(etcd.endpoints())
 *     .tls(certs.caCert(), certs.clientCert(), certs.clientKey()).build();
 * }</pre>
 *
 * <p>The server certificate names only the IP {@code 127.0.0.1} (no DNS name), so dialling the
 * same member as {@code https://localhost:PORT} is a hostname mismatch. The client certificate's
 * common name is {@value #CLIENT_COMMON_NAME}: with {@code --client-cert-auth} and auth enabled,
 * etcd takes it as the user name of a request that carries no token.
 */
public final class TestCertificates {

  /** Common name (and so etcd user name) of {@link #clientCert()}: {@value}. */
  public static final String CLIENT_COMMON_NAME = "steelyard-client";

  private static final Duration VALIDITY = Duration.ofDays(2);
  private static final SecureRandom RANDOM = new SecureRandom();

  private final Path dir;
  private final X509Certificate ca;
  private final KeyPair caKey;

  private TestCertificates(Path dir, X509Certificate ca, KeyPair caKey) {
    this.dir = dir;
    this.ca = ca;
    this.caKey = caKey;
  }

  /**
   * {@link #generate(Path)} into a new temporary directory, deleted when the JVM exits: for a
   * static field next to a static {@link EtcdCluster}, e.g. {@code static final TestCertificates
   * certs = TestCertificates.generate();}.
   */
  public static TestCertificates generate() {
    Path dir;
    try {
      dir = Files.createTempDirectory("steelyard-pki-");
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create a directory for test certificates", e);
    }
    dir.toFile().deleteOnExit();
    TestCertificates certs = generate(dir);
    // Registered after the directory, so deleted before it.
    try (java.util.stream.Stream<Path> files = Files.list(dir)) {
      files.forEach(f -> f.toFile().deleteOnExit());
    } catch (IOException e) {
      throw new UncheckedIOException("cannot list " + dir, e);
    }
    return certs;
  }

  /**
   * Writes a fresh CA, server, client, unknown-CA and expired certificates into {@code dir}
   * (created if missing). Takes well under a second.
   */
  public static TestCertificates generate(Path dir) {
    try {
      Files.createDirectories(dir);
      Instant now = Instant.now();
      Instant from = now.minus(Duration.ofHours(1));
      Instant to = now.plus(VALIDITY);

      KeyPair caKey = newKeyPair();
      X509Certificate ca = caCertificate("CN=steelyard test CA", caKey, from, to);
      write(dir.resolve("ca.pem"), ca);

      KeyPair serverKey = newKeyPair();
      write(dir.resolve("server.pem"),
          leaf("CN=etcd", serverKey, ca, caKey, from, to, true,
              new GeneralName(GeneralName.iPAddress, "127.0.0.1")));
      write(dir.resolve("server-key.pem"), serverKey);

      KeyPair clientKey = newKeyPair();
      write(dir.resolve("client.pem"),
          leaf("CN=" + CLIENT_COMMON_NAME, clientKey, ca, caKey, from, to, false));
      write(dir.resolve("client-key.pem"), clientKey);

      // Valid dates, but a year-old window that ended yesterday.
      KeyPair expiredKey = newKeyPair();
      write(dir.resolve("expired-client.pem"),
          leaf("CN=" + CLIENT_COMMON_NAME, expiredKey, ca, caKey,
              now.minus(Duration.ofDays(365)), now.minus(Duration.ofDays(1)), false));
      write(dir.resolve("expired-client-key.pem"), expiredKey);

      KeyPair otherCaKey = newKeyPair();
      X509Certificate otherCa = caCertificate("CN=some other CA", otherCaKey, from, to);
      write(dir.resolve("other-ca.pem"), otherCa);
      KeyPair otherClientKey = newKeyPair();
      write(dir.resolve("other-client.pem"),
          leaf("CN=" + CLIENT_COMMON_NAME, otherClientKey, otherCa, otherCaKey, from, to, false));
      write(dir.resolve("other-client-key.pem"), otherClientKey);
      return new TestCertificates(dir, ca, caKey);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write test certificates to " + dir, e);
    } catch (GeneralSecurityException | OperatorCreationException e) {
      throw new IllegalStateException("cannot generate test certificates", e);
    }
  }

  /**
   * Writes a new client certificate signed by {@link #caCert()}, valid from {@code notBefore} to
   * {@code notAfter} (to the second), and its key, to {@code certFile} and {@code keyFile}: for
   * tests of certificates that expire and are rotated.
   */
  public void issueClientCertificate(Path certFile, Path keyFile, Instant notBefore, Instant notAfter) {
    try {
      KeyPair key = newKeyPair();
      write(certFile,
          leaf("CN=" + CLIENT_COMMON_NAME, key, ca, caKey, notBefore, notAfter, false));
      write(keyFile, key);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write a client certificate to " + certFile, e);
    } catch (GeneralSecurityException | OperatorCreationException e) {
      throw new IllegalStateException("cannot generate a client certificate", e);
    }
  }

  /**
   * Writes a client certificate signed by {@link #caCert()} that names {@code uri} as its URI SAN
   * (a SPIFFE ID such as {@code spiffe://test/greeter-client}) and {@code commonName} as its
   * subject CN, valid for two days, and its key: for tests of identities taken from certificates.
   */
  public void issueClientCertificate(Path certFile, Path keyFile, String commonName, String uri) {
    issueClientCertificate(certFile, keyFile, commonName, uri, null);
  }

  /**
   * Writes a client certificate signed by {@link #caCert()} with each of these names that is not
   * null: a subject CN, a URI SAN and a DNS SAN (with none, the subject is {@code O=steelyard
   * test} and there are no SANs), valid for two days, and its key: for tests of which name is
   * taken as the identity, and of a certificate that names none.
   */
  public void issueClientCertificate(
      Path certFile, Path keyFile, @Nullable String commonName, @Nullable String uri, @Nullable String dns) {
    List<GeneralName> names = new ArrayList<>();
    if (uri != null) {
      names.add(new GeneralName(GeneralName.uniformResourceIdentifier, uri));
    }
    if (dns != null) {
      names.add(new GeneralName(GeneralName.dNSName, dns));
    }
    issue(certFile, keyFile, commonName == null ? "O=steelyard test" : "CN=" + commonName, false,
        names.toArray(GeneralName[]::new));
  }

  /**
   * Writes a new server certificate signed by {@link #caCert()} (IP SAN {@code 127.0.0.1}, valid
   * for two days) and its key: for tests of a server whose certificate is rotated.
   */
  public void issueServerCertificate(Path certFile, Path keyFile) {
    issue(certFile, keyFile, "CN=server", true, new GeneralName(GeneralName.iPAddress, "127.0.0.1"));
  }

  private void issue(Path certFile, Path keyFile, String subject, boolean server, GeneralName... names) {
    try {
      Instant now = Instant.now();
      KeyPair key = newKeyPair();
      write(certFile, leaf(subject, key, ca, caKey, now.minus(Duration.ofHours(1)), now.plus(VALIDITY), server, names));
      write(keyFile, key);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write a certificate to " + certFile, e);
    } catch (GeneralSecurityException | OperatorCreationException e) {
      throw new IllegalStateException("cannot generate a certificate", e);
    }
  }

  /** The directory holding every file. */
  public Path dir() {
    return dir;
  }

  /** The CA that signed the server, client and expired client certificates. */
  public Path caCert() {
    return dir.resolve("ca.pem");
  }

  /** etcd's certificate: IP SAN {@code 127.0.0.1} only. */
  public Path serverCert() {
    return dir.resolve("server.pem");
  }

  public Path serverKey() {
    return dir.resolve("server-key.pem");
  }

  /** A valid client certificate signed by {@link #caCert()}. */
  public Path clientCert() {
    return dir.resolve("client.pem");
  }

  public Path clientKey() {
    return dir.resolve("client-key.pem");
  }

  /** Signed by {@link #caCert()}, but its validity ended a day ago. */
  public Path expiredClientCert() {
    return dir.resolve("expired-client.pem");
  }

  public Path expiredClientKey() {
    return dir.resolve("expired-client-key.pem");
  }

  /** A CA that signed nothing etcd presents: trusting only it fails the server's handshake. */
  public Path unknownCaCert() {
    return dir.resolve("other-ca.pem");
  }

  /** A client certificate signed by {@link #unknownCaCert()}, which etcd does not trust. */
  public Path unknownCaClientCert() {
    return dir.resolve("other-client.pem");
  }

  public Path unknownCaClientKey() {
    return dir.resolve("other-client-key.pem");
  }

  @Override
  public String toString() {
    return "TestCertificates[" + dir + "]";
  }

  private static KeyPair newKeyPair() throws GeneralSecurityException {
    KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
    g.initialize(new ECGenParameterSpec("secp256r1"), RANDOM);
    return g.generateKeyPair();
  }

  private static X509Certificate caCertificate(String subject, KeyPair key, Instant from, Instant to)
      throws GeneralSecurityException, OperatorCreationException, IOException {
    X500Name name = new X500Name(subject);
    X509v3CertificateBuilder b =
        new JcaX509v3CertificateBuilder(
            name, serial(), Date.from(from), Date.from(to), name, key.getPublic());
    JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();
    b.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
    b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
    b.addExtension(Extension.subjectKeyIdentifier, false, ext.createSubjectKeyIdentifier(key.getPublic()));
    return sign(b, key);
  }

  private static X509Certificate leaf(
      String subject,
      KeyPair key,
      X509Certificate issuer,
      KeyPair issuerKey,
      Instant from,
      Instant to,
      boolean server,
      GeneralName... altNames)
      throws GeneralSecurityException, OperatorCreationException, IOException {
    X509v3CertificateBuilder b =
        new JcaX509v3CertificateBuilder(
            issuer, serial(), Date.from(from), Date.from(to), new X500Name(subject), key.getPublic());
    JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();
    b.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
    b.addExtension(
        Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature | KeyUsage.keyAgreement));
    // etcd uses its server certificate for outgoing peer connections too, hence both purposes.
    b.addExtension(
        Extension.extendedKeyUsage,
        false,
        server
            ? new ExtendedKeyUsage(new KeyPurposeId[] {KeyPurposeId.id_kp_serverAuth, KeyPurposeId.id_kp_clientAuth})
            : new ExtendedKeyUsage(KeyPurposeId.id_kp_clientAuth));
    b.addExtension(Extension.authorityKeyIdentifier, false, ext.createAuthorityKeyIdentifier(issuer));
    if (altNames.length > 0) {
      b.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(altNames));
    }
    return sign(b, issuerKey);
  }

  private static X509Certificate sign(X509v3CertificateBuilder b, KeyPair signer)
      throws OperatorCreationException, GeneralSecurityException {
    ContentSigner s = new JcaContentSignerBuilder("SHA256withECDSA").build(signer.getPrivate());
    X509CertificateHolder holder = b.build(s);
    return new JcaX509CertificateConverter().getCertificate(holder);
  }

  private static BigInteger serial() {
    return new BigInteger(64, RANDOM).add(BigInteger.ONE);
  }

  private static void write(Path file, X509Certificate cert) throws IOException {
    try (Writer w = Files.newBufferedWriter(file, StandardCharsets.US_ASCII);
        JcaPEMWriter pem = new JcaPEMWriter(w)) {
      pem.writeObject(cert);
    }
  }

  private static void write(Path file, KeyPair key) throws IOException {
    try (Writer w = Files.newBufferedWriter(file, StandardCharsets.US_ASCII);
        JcaPEMWriter pem = new JcaPEMWriter(w)) {
      pem.writeObject(new JcaPKCS8Generator(key.getPrivate(), null));
    }
  }
}
