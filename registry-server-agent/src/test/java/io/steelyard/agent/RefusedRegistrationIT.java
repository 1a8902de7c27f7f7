package io.steelyard.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.RegistryException;
import io.steelyard.testkit.EtcdAuthAdmin;
import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A registration etcd refuses is reported as refused within 3 s, not retried as an outage, and
 * succeeds on its own once an operator fixes the role. The server role of docs/security.md is
 * enough for the agent's own work (register, keep alive, set its weight, deregister).
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class RefusedRegistrationIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().rootPassword("rootpw").build();

  private static final Duration BOUND = Duration.ofSeconds(3);

  @BeforeAll
  static void roles() {
    etcd.authAdmin()
        .addRole("steelyard-server-greeter", EtcdAuthAdmin.Access.READWRITE, "/services/greeter/", "/services/.drained/greeter/")
        .addRole("steelyard-server-othersvc", EtcdAuthAdmin.Access.READWRITE, "/services/othersvc/", "/services/.drained/othersvc/")
        .addUser("greeter", "greeterpw", "steelyard-server-greeter");
  }

  @BeforeAll
  static void warmJvm() throws Exception {
    // The bound is about naming a refusal, not about this JVM loading jetcd, gRPC and Netty.
    try (ServiceRegistration r = ServiceRegistration.builder(as("greeter", "greeterpw"), "greeter", "10.0.0.9:1").build()) {
      r.start().get(30, TimeUnit.SECONDS);
    }
  }

  private static EtcdConnection as(String user, String password) {
    return EtcdConnection.builder().endpoints(etcd.endpoints()).user(user, password).build();
  }

  @Test
  void theServerRoleRegistersKeepsAliveSetsItsWeightAndDeregisters() throws Exception {
    try (ServiceRegistration r = ServiceRegistration.builder(as("greeter", "greeterpw"), "greeter", "10.0.0.1:1")
        .ttl(Duration.ofSeconds(2)).build()) {
      r.start().get(20, TimeUnit.SECONDS);
      r.setWeightAndWait(7);
      await("keepalives go on past the TTL")
          .during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(6))
          .until(() -> r.state() == RegistrationState.REGISTERED);
      assertThat(r.weight()).isEqualTo(7);
    }
  }

  @Test
  void anotherServicesKeyIsRefusedWithinThreeSecondsAndRetriedSlowlyUntilTheRoleIsFixed() throws Exception {
    etcd.authAdmin().addUser("latecomer", "latepw", "steelyard-server-greeter");
    try (ServiceRegistration r = ServiceRegistration.builder(as("latecomer", "latepw"), "othersvc", "10.0.0.2:1")
        .retryBackoff(Duration.ofMillis(100), Duration.ofSeconds(1))
        .build()) {
      long started = System.nanoTime();
      assertThatThrownBy(() -> r.start().get(20, TimeUnit.SECONDS))
          .isInstanceOf(ExecutionException.class)
          .cause()
          .isInstanceOf(RegistryException.class)
          .hasMessageContaining("permission denied")
          .hasMessageContaining("/services/othersvc/10.0.0.2:1");
      assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(BOUND);
      assertThat(r.state()).isEqualTo(RegistrationState.REFUSED);
      assertThat(r.refusal()).get().extracting(RegistryException::kind).isEqualTo(RegistryException.Kind.PERMISSION_DENIED);

      etcd.authAdmin().grantRole("latecomer", "steelyard-server-othersvc");
      await("registered on a slow retry once the role allows it")
          .atMost(Duration.ofSeconds(20))
          .until(() -> r.state() == RegistrationState.REGISTERED);
      assertThat(r.refusal()).isEmpty();
      assertThat(r.registered()).isCompleted();
    }
  }

  @Test
  void aWrongPasswordIsRefusedAsAuthenticationWithinThreeSeconds() {
    try (ServiceRegistration r = ServiceRegistration.builder(as("greeter", "wrong"), "greeter", "10.0.0.3:1").build()) {
      long started = System.nanoTime();
      assertThatThrownBy(() -> r.start().get(20, TimeUnit.SECONDS))
          .cause()
          .isInstanceOf(RegistryException.class)
          .hasMessageContaining("authentication failed")
          .satisfies(e -> assertThat(((RegistryException) e).kind()).isEqualTo(RegistryException.Kind.UNAUTHENTICATED));
      assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(BOUND);
      assertThat(r.state()).isEqualTo(RegistrationState.REFUSED);
    }
  }
}
