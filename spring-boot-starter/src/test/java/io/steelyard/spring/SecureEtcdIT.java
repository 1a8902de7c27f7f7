package io.steelyard.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.grpc.Channel;
import io.micrometer.core.instrument.MeterRegistry;
import io.steelyard.agent.RegistrationState;
import io.steelyard.registry.CertificateMetrics;
import io.steelyard.registry.RegistryException;
import io.steelyard.spring.actuate.SteelyardHealthIndicator;
import io.steelyard.testkit.EtcdAuthAdmin;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.TestCertificates;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.grpc.client.GrpcChannelFactory;

/**
 * steelyard.etcd.* against an etcd that requires mutual TLS and a user: the CA, client
 * certificate, key, user and password reach both the registration and the etcd:/// channel. The
 * user may not write the service's keys at first: the refusal is named (health DOWN with etcd's
 * reason), not retried as an outage, and the registration succeeds once an operator grants the role.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class SecureEtcdIT {

  private static final TestCertificates certs = TestCertificates.generate();

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().mutualTls(certs).rootPassword("rootpw").build();

  @BeforeAll
  static void roles() {
    etcd.authAdmin()
        .addRole("steelyard-server-who", EtcdAuthAdmin.Access.READWRITE, "/services/who/", "/services/.drained/who/")
        .addRole("steelyard-server-other", EtcdAuthAdmin.Access.READWRITE, "/services/other/")
        .addUser("app", "apppw", "steelyard-server-other");
  }

  @Test
  void aRefusedRegistrationIsNamedAndHealsOnceTheRoleAllowsIt() throws Exception {
    try (ConfigurableApplicationContext app = new SpringApplicationBuilder(TestApp.class)
        .web(WebApplicationType.NONE)
        .properties(
            "spring.application.name=who",
            "test.name=secure",
            "spring.grpc.server.port=0",
            "spring.grpc.server.host=127.0.0.1",
            "spring.grpc.server.health.enabled=true",
            "steelyard.etcd.endpoints=" + etcd.endpoints(),
            "steelyard.etcd.ca-cert=" + certs.caCert(),
            "steelyard.etcd.cert=" + certs.clientCert(),
            "steelyard.etcd.key=" + certs.clientKey(),
            "steelyard.etcd.user=app",
            "steelyard.etcd.password=apppw",
            // Starts although etcd refuses the key at first: that is what this test watches heal.
            "steelyard.registration.await-on-startup=0",
            "spring.grpc.client.channels.who.address=etcd:///who",
            "spring.grpc.client.channels.who.default-load-balancing-policy=weighted_random")
        .run()) {
      assertThat(etcd.endpoints()).startsWith("https://");
      GrpcServerRegistration registration = app.getBean(GrpcServerRegistration.class);
      SteelyardHealthIndicator health = app.getBean(SteelyardHealthIndicator.class);

      await("refused, not retried as an outage").atMost(Duration.ofSeconds(10))
          .until(() -> registration.state() == RegistrationState.REFUSED);
      assertThat(registration.registration().orElseThrow().refusal()).get()
          .extracting(RegistryException::kind).isEqualTo(RegistryException.Kind.PERMISSION_DENIED);
      Health refused = health.health();
      assertThat(refused.getStatus()).isEqualTo(Status.DOWN);
      assertThat(registrationDetails(refused).get("refusal").toString()).contains("permission denied");

      etcd.authAdmin().grantRole("app", "steelyard-server-who");
      registration.registered().get(30, TimeUnit.SECONDS);
      assertThat(health.health().getStatus()).isEqualTo(Status.UP);
      Channel channel = app.getBean(GrpcChannelFactory.class).createChannel("who");
      assertThat(WhoService.call(channel)).as("resolved over mutual TLS as user app").isEqualTo("secure");
      assertThat(app.getBean(MeterRegistry.class).get(CertificateMetrics.NOT_AFTER)
              .tag("file", certs.clientCert().toString()).gauge().value())
          .as("the client certificate's not-after, in seconds")
          .isEqualTo(notAfterSeconds(certs.clientCert()));
    }
  }

  private static double notAfterSeconds(java.nio.file.Path pem) throws Exception {
    try (java.io.InputStream in = java.nio.file.Files.newInputStream(pem)) {
      return ((java.security.cert.X509Certificate)
              java.security.cert.CertificateFactory.getInstance("X.509").generateCertificate(in))
          .getNotAfter().toInstant().getEpochSecond();
    }
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> registrationDetails(Health h) {
    return (Map<String, Object>) h.getDetails().get("registration");
  }
}
