package io.steelyard.discovery;

import static io.steelyard.discovery.Etcd.bytes;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.Client;
import io.grpc.EquivalentAddressGroup;
import io.grpc.NameResolver;
import io.grpc.Status;
import io.grpc.SynchronizationContext;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdAuthAdmin;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.TestCertificates;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The {@code etcd} resolver against etcd with mutual TLS and auth, as a caller would run it: a
 * user whose role may only read {@code /services/}; the connection given to the provider, or to
 * one channel through {@link EtcdNameResolverProvider#CONNECTION}.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class SecureDiscoveryIT {

  @TempDir static Path dir;
  private static TestCertificates certs;
  private static EtcdCluster etcd;
  private static Client root;

  @BeforeAll
  static void startSecureEtcd() throws Exception {
    certs = TestCertificates.generate(dir);
    etcd = EtcdCluster.builder().mutualTls(certs).rootPassword("rootpw").build();
    etcd.start();
    root = connection("root:rootpw").connect();
    etcd.authAdmin()
        .addRole("steelyard-client", EtcdAuthAdmin.Access.READ, "/services/")
        .addUser("caller", "callerpw", "steelyard-client")
        .addRole("elsewhere", EtcdAuthAdmin.Access.READ, "/other/")
        .addUser("stranger", "strangerpw", "elsewhere");
    Etcd.put(root, "/services/greeter/127.0.0.1:7001", "127.0.0.1:7001|3");
  }

  @AfterAll
  static void stop() {
    root.close();
    etcd.close();
  }

  private static EtcdConnection connection(String user) {
    return EtcdConnection.builder()
        .endpoints(etcd.endpoints())
        .securityOptions(user, certs.caCert(), certs.clientCert(), certs.clientKey())
        .build();
  }

  @Test
  void providerConfiguredWithTlsAndAReadOnlyUserResolvesAndFollowsChanges() {
    EtcdNameResolverProvider provider =
        EtcdNameResolverProvider.builder().connection(connection("caller:callerpw")).build();
    Resolution r = Resolution.start(provider, URI.create("etcd:///greeter"), null);
    try {
      await().atMost(Duration.ofSeconds(20)).until(() -> r.lastAddresses().contains("127.0.0.1:7001"));
      Etcd.put(root, "/services/greeter/127.0.0.1:7002", "127.0.0.1:7002|1");
      await().atMost(Duration.ofSeconds(20)).until(() -> r.lastAddresses().contains("127.0.0.1:7002"));
    } finally {
      r.close();
      Etcd.delete(root, "/services/greeter/127.0.0.1:7002");
    }
  }

  @Test
  void aChannelCanBringItsOwnConnection() {
    // The provider's own etcd is nowhere: only the channel's argument can make this resolve.
    EtcdNameResolverProvider provider =
        EtcdNameResolverProvider.builder().connection(EtcdConnection.of("http://127.0.0.1:1")).build();
    Resolution r = Resolution.start(provider, URI.create("etcd:///greeter"), connection("caller:callerpw"));
    try {
      await().atMost(Duration.ofSeconds(20)).until(() -> r.lastAddresses().contains("127.0.0.1:7001"));
    } finally {
      r.close();
    }
  }

  @Test
  void aChannelConnectionWithATargetNamingEndpointsIsRefused() {
    Resolution r =
        Resolution.start(new EtcdNameResolverProvider(), URI.create("etcd://127.0.0.1:2379/greeter"),
            connection("caller:callerpw"));
    try {
      await().atMost(Duration.ofSeconds(5)).until(() -> !r.errors.isEmpty());
      assertThat(r.errors.get(0).getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
      assertThat(r.errors.get(0).getDescription()).contains("give etcd in one place");
    } finally {
      r.close();
    }
  }

  @Test
  void aRefusedListIsReportedAsARefusalWithinThreeSeconds() {
    EtcdNameResolverProvider provider =
        EtcdNameResolverProvider.builder().connection(connection("stranger:strangerpw")).build();
    long started = System.nanoTime();
    Resolution r = Resolution.start(provider, URI.create("etcd:///greeter"), null);
    try {
      await().atMost(Duration.ofSeconds(10)).until(() -> !r.errors.isEmpty());
      assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(3));
      Status error = r.errors.get(0);
      assertThat(error.getCode()).isEqualTo(Status.Code.UNAVAILABLE);
      assertThat(error.getDescription())
          .contains("refused")
          .contains("permission denied")
          .doesNotContain("unreachable");
    } finally {
      r.close();
    }
  }

  @Test
  void theClientRoleCannotWrite() {
    try (Client caller = connection("caller:callerpw").connect()) {
      assertThatThrownBy(() -> caller.getKVClient().put(bytes("/services/greeter/x:1"), bytes("x:1"))
              .get(10, TimeUnit.SECONDS))
          .isInstanceOf(ExecutionException.class)
          .hasStackTraceContaining("permission denied");
    }
  }

  /** A resolver started outside a channel, recording what it reports. */
  private static final class Resolution {
    final SynchronizationContext sync =
        new SynchronizationContext((t, e) -> {
          throw new AssertionError(e);
        });
    final List<List<EquivalentAddressGroup>> results = new CopyOnWriteArrayList<>();
    final List<Status> errors = new CopyOnWriteArrayList<>();
    NameResolver resolver;

    static Resolution start(EtcdNameResolverProvider provider, URI target, EtcdConnection own) {
      Resolution r = new Resolution();
      NameResolver.Args.Builder args = NameResolver.Args.newBuilder()
          .setDefaultPort(443)
          .setProxyDetector(a -> null)
          .setSynchronizationContext(r.sync)
          .setServiceConfigParser(new NameResolver.ServiceConfigParser() {
            @Override
            public NameResolver.ConfigOrError parseServiceConfig(java.util.Map<String, ?> raw) {
              return NameResolver.ConfigOrError.fromConfig(raw);
            }
          });
      if (own != null) {
        args.setArg(EtcdNameResolverProvider.CONNECTION, own);
      }
      r.resolver = provider.newNameResolver(target, args.build());
      r.sync.execute(() -> r.resolver.start(new NameResolver.Listener2() {
        @Override
        public void onResult(NameResolver.ResolutionResult result) {
          onResult2(result);
        }

        @Override
        public Status onResult2(NameResolver.ResolutionResult result) {
          if (result.getAddressesOrError().hasValue()) {
            r.results.add(result.getAddressesOrError().getValue());
          } else {
            r.errors.add(result.getAddressesOrError().getStatus());
          }
          return Status.OK;
        }

        @Override
        public void onError(Status error) {
          r.errors.add(error);
        }
      }));
      return r;
    }

    List<String> lastAddresses() {
      if (results.isEmpty()) {
        return List.of();
      }
      return results.get(results.size() - 1).stream()
          .map(eag -> eag.getAddresses().get(0).toString().replaceFirst("^.*/", ""))
          .toList();
    }

    void close() {
      sync.execute(resolver::shutdown);
    }
  }
}
