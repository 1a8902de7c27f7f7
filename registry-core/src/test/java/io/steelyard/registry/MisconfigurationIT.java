package io.steelyard.registry;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.steelyard.registry.RegistryException.Kind;
import io.steelyard.registry.internal.EtcdCalls;
import io.steelyard.testkit.EtcdAuthAdmin;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.TestCertificates;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Every TLS and auth misconfiguration against a real etcd (mutual TLS with auth, and plain with
 * auth) fails with a {@link RegistryException} of its own kind whose one-line message names the
 * problem, within 3 s, although the call's timeout is 10 s: never as "etcd did not answer".
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class MisconfigurationIT {

  private static final TestCertificates certs = TestCertificates.generate();

  @RegisterExtension
  static final EtcdCluster secure = EtcdCluster.builder().mutualTls(certs).rootPassword("rootpw").build();

  @RegisterExtension static final EtcdCluster plain = EtcdCluster.builder().rootPassword("rootpw").build();

  /** How fast a misconfiguration must be named: well before any request timeout. */
  private static final Duration BOUND = Duration.ofSeconds(3);

  /** Far above BOUND: a failure that only a timeout ends fails the bound. */
  private static final Duration CALL_TIMEOUT = Duration.ofSeconds(10);


  @BeforeAll
  static void usersAndAWarmJvm() {
    plain.authAdmin()
        .addRole("steelyard-server-greeter", EtcdAuthAdmin.Access.READWRITE, "/services/greeter/")
        .addUser("greeter", "greeterpw", "steelyard-server-greeter");
    // The bound is about naming the problem, not about the JVM loading its TLS classes.
    get(secureConnection().user("root", "rootpw"), "/warm-up");
  }

  private static EtcdConnection.Builder secureConnection() {
    return EtcdConnection.builder().endpoints(secure.endpoints()).tls(certs.caCert(), certs.clientCert(), certs.clientKey());
  }

  @Test
  void noClientCertificateForAMutualTlsEtcd() {
    assertRefused(
        EtcdConnection.builder().endpoints(secure.endpoints()).tls(certs.caCert(), null, null).user("root", "rootpw"),
        Kind.TLS, "etcd rejected the client certificate");
  }

  @Test
  void expiredClientCertificateIsNamedWithItsFileAndNotAfter() {
    RegistryException e = assertRefused(
        EtcdConnection.builder().endpoints(secure.endpoints())
            .tls(certs.caCert(), certs.expiredClientCert(), certs.expiredClientKey()).user("root", "rootpw"),
        Kind.TLS, "etcd refused the client certificate " + certs.expiredClientCert() + " (not after ");
    assertThat(e.getMessage()).contains(", expired) (get /services/greeter/)");
  }

  @Test
  void clientCertificateFromAnUnknownCaIsNamedWithItsFile() {
    assertRefused(
        EtcdConnection.builder().endpoints(secure.endpoints())
            .tls(certs.caCert(), certs.unknownCaClientCert(), certs.unknownCaClientKey()).user("root", "rootpw"),
        Kind.TLS, "etcd refused the client certificate " + certs.unknownCaClientCert() + " (not after ");
  }

  @Test
  void etcdCertificateFromAnUnknownCa() {
    assertRefused(
        EtcdConnection.builder().endpoints(secure.endpoints())
            .tls(certs.unknownCaCert(), certs.clientCert(), certs.clientKey()).user("root", "rootpw"),
        Kind.TLS, "etcd's certificate is not signed by a CA this client trusts");
  }

  @Test
  void hostnameMismatch() {
    assertRefused(
        EtcdConnection.builder().endpoints(secure.endpoints().replace("127.0.0.1", "localhost"))
            .tls(certs.caCert(), certs.clientCert(), certs.clientKey()).user("root", "rootpw"),
        Kind.TLS, "etcd's certificate does not name the host");
  }

  @Test
  void plainTextAgainstTheTlsPort() {
    String http = secure.endpoints().replace("https://", "http://");
    assertRefused(EtcdConnection.builder().endpoints(http).user("root", "rootpw"),
        Kind.TLS, http + " is a TLS port: use https://");
  }

  @Test
  void tlsAgainstAPlainPort() {
    String https = plain.endpoints().replace("http://", "https://");
    assertRefused(
        EtcdConnection.builder().endpoints(https).tls(certs.caCert(), certs.clientCert(), certs.clientKey()).user("root", "rootpw"),
        Kind.TLS, https + " is a plain-text port, not TLS");
  }

  @Test
  void wrongPassword() {
    RegistryException e = assertRefused(EtcdConnection.builder().endpoints(plain.endpoints()).user("greeter", "wrong"),
        Kind.UNAUTHENTICATED, "authentication failed");
    assertThat(e.getMessage()).doesNotContain("wrong");
  }

  @Test
  void noUserForAnEtcdWithAuth() {
    assertRefused(EtcdConnection.builder().endpoints(plain.endpoints()),
        Kind.UNAUTHENTICATED, "authentication failed: etcd requires a user and password");
  }

  @Test
  void permissionDeniedNamesTheKey() {
    EtcdConnection greeter = EtcdConnection.builder().endpoints(plain.endpoints()).user("greeter", "greeterpw").build();
    try (Client c = greeter.connect()) {
      EtcdCalls calls = new EtcdCalls(CALL_TIMEOUT);
      long started = System.nanoTime();
      RegistryException e = catchThrowableOfType(RegistryException.class,
          () -> calls.await("put /services/othersvc/10.0.0.7:50051",
              () -> c.getKVClient().put(bytes("/services/othersvc/10.0.0.7:50051"), bytes("x"))));
      assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(BOUND);
      assertThat(e.kind()).isEqualTo(Kind.PERMISSION_DENIED);
      assertThat(e.getMessage())
          .startsWith("etcd refused put /services/othersvc/10.0.0.7:50051: permission denied")
          .doesNotContain("\n");
    }
  }

  private static RegistryException assertRefused(EtcdConnection.Builder connection, Kind kind, String problem) {
    long started = System.nanoTime();
    RegistryException e = catchThrowableOfType(RegistryException.class, () -> get(connection, "/services/greeter/"));
    Duration took = Duration.ofNanos(System.nanoTime() - started);
    assertThat(e).as("expected a refusal").isNotNull();
    assertThat(e.kind()).as(e.getMessage()).isEqualTo(kind);
    assertThat(e.kind().refused()).isTrue();
    assertThat(e.getMessage()).contains(problem).doesNotContain("\n").doesNotContain("did not answer");
    assertThat(took).as("named within %s: %s", BOUND, e.getMessage()).isLessThan(BOUND);
    return e;
  }

  private static void get(EtcdConnection.Builder connection, String key) {
    try (Client c = connection.build().connect()) {
      new EtcdCalls(CALL_TIMEOUT).await("get " + key, () -> c.getKVClient().get(bytes(key)));
    }
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, UTF_8);
  }
}
