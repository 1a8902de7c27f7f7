package io.steelyard.registry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.steelyard.registry.internal.EtcdCalls;
import io.steelyard.testkit.EtcdAuthAdmin;
import io.steelyard.testkit.EtcdCluster;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** User/password authentication against a real etcd with auth enabled. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class EtcdConnectionAuthIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().rootPassword("rootpw").build();

  private static final ByteSequence KEY = bytes("/services/greeter/10.0.0.7:50051");
  private static final EtcdCalls CALLS = new EtcdCalls(Duration.ofSeconds(10));

  @BeforeAll
  static void addUsers() {
    // A least-privilege user, as a registry would run with: read/write under /services/ only.
    etcd.authAdmin()
        .addRole("registry", EtcdAuthAdmin.Access.READWRITE, "/services/")
        .addUser("steelyard", "s3cret", "registry");
  }

  @Test
  void userWithPasswordCanWriteAndRead() throws Exception {
    EtcdConnection conn =
        EtcdConnection.builder().endpoints(etcd.endpoints()).user("steelyard", "s3cret").build();
    try (Client c = conn.connect()) {
      c.getKVClient().put(KEY, bytes("10.0.0.7:50051|5")).get(10, TimeUnit.SECONDS);
      var kvs = c.getKVClient().get(KEY).get(10, TimeUnit.SECONDS).getKvs();
      assertThat(kvs).hasSize(1);
      assertThat(kvs.get(0).getValue().toString(StandardCharsets.UTF_8)).isEqualTo("10.0.0.7:50051|5");
    }
  }

  @Test
  void userPasswordStringIsParsedLikeTheCliFlag() throws Exception {
    EtcdConnection conn =
        EtcdConnection.builder().endpoints(etcd.endpoints()).userPassword("steelyard:s3cret").build();
    try (Client c = conn.connect()) {
      assertThat(c.getKVClient().get(KEY).get(10, TimeUnit.SECONDS).getHeader().getRevision())
          .isPositive();
    }
  }

  @Test
  void wrongPasswordIsRefused() {
    EtcdConnection conn =
        EtcdConnection.builder()
            .endpoints(etcd.endpoints())
            .user("steelyard", "wrong")
            .connectTimeout(Duration.ofSeconds(3))
            .build();
    try (Client c = conn.connect()) {
      assertThatThrownBy(() -> c.getKVClient().get(KEY).get(10, TimeUnit.SECONDS))
          .isInstanceOf(ExecutionException.class)
          .hasStackTraceContaining("authentication failed");
    }
  }

  @Test
  void anonymousClientIsRefused() {
    try (Client c = EtcdConnection.of(etcd.endpoints()).connect()) {
      assertThatThrownBy(() -> c.getKVClient().get(KEY).get(10, TimeUnit.SECONDS))
          .isInstanceOf(ExecutionException.class)
          .hasStackTraceContaining("user name is empty");
    }
  }

  @Test
  void roleLimitsTheUserToTheServicesPrefix() {
    EtcdConnection conn =
        EtcdConnection.builder().endpoints(etcd.endpoints()).user("steelyard", "s3cret").build();
    try (Client c = conn.connect()) {
      assertThatThrownBy(() -> c.getKVClient().put(bytes("/other/key"), bytes("x")).get(10, TimeUnit.SECONDS))
          .isInstanceOf(ExecutionException.class)
          .hasStackTraceContaining("permission denied");
    }
  }

  // The etcd-call layer names each refusal as such, at once, never as a timeout.

  @Test
  void aMissingPermissionIsPermissionDenied() {
    EtcdConnection conn =
        EtcdConnection.builder().endpoints(etcd.endpoints()).user("steelyard", "s3cret").build();
    try (Client c = conn.connect()) {
      assertThatThrownBy(() -> CALLS.await("put /other/key", () -> c.getKVClient().put(bytes("/other/key"), bytes("x"))))
          .isInstanceOfSatisfying(
              RegistryException.class,
              e -> {
                assertThat(e.kind()).isEqualTo(RegistryException.Kind.PERMISSION_DENIED);
                assertThat(e.getMessage()).startsWith("etcd refused put /other/key: permission denied");
              });
    }
  }

  @Test
  void aWrongPasswordIsUnauthenticatedNotATimeout() {
    EtcdConnection conn =
        EtcdConnection.builder().endpoints(etcd.endpoints()).user("steelyard", "wrong").build();
    try (Client c = conn.connect()) {
      // With a 10 s timeout, UNAVAILABLE would mean the refusal was mistaken for silence.
      assertThatThrownBy(() -> CALLS.await("get k", () -> c.getKVClient().get(KEY)))
          .isInstanceOfSatisfying(
              RegistryException.class,
              e -> {
                assertThat(e.kind()).isEqualTo(RegistryException.Kind.UNAUTHENTICATED);
                assertThat(e.getMessage())
                    .startsWith("etcd refused get k: authentication failed")
                    .doesNotContain("wrong");
              });
    }
  }

  @Test
  void anAnonymousRequestIsRefusedAsAuthenticationInEtcdsWords() {
    try (Client c = EtcdConnection.of(etcd.endpoints()).connect()) {
      // etcd answers INVALID_ARGUMENT here; its description (rpctypes.ErrGRPCUserEmpty) says it
      // is about credentials.
      assertThatThrownBy(() -> CALLS.await("get k", () -> c.getKVClient().get(KEY)))
          .isInstanceOfSatisfying(
              RegistryException.class,
              e -> {
                assertThat(e.kind()).isEqualTo(RegistryException.Kind.UNAUTHENTICATED);
                assertThat(e.getMessage())
                    .startsWith("etcd refused get k: authentication failed: etcd requires a user")
                    .contains("user name is empty");
              });
    }
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }
}
