package io.steelyard.discovery;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.NameResolver;
import io.grpc.NameResolverProvider;
import io.grpc.Status;
import io.grpc.SynchronizationContext;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;

class EtcdNameResolverProviderTest {

  private final SynchronizationContext syncContext =
      new SynchronizationContext((t, e) -> {
        throw new AssertionError(e);
      });
  private final NameResolver.Args args = NameResolver.Args.newBuilder()
      .setDefaultPort(443)
      .setProxyDetector(addr -> null)
      .setSynchronizationContext(syncContext)
      .setServiceConfigParser(new NameResolver.ServiceConfigParser() {
        @Override
        public NameResolver.ConfigOrError parseServiceConfig(java.util.Map<String, ?> rawServiceConfig) {
          return NameResolver.ConfigOrError.fromConfig(rawServiceConfig);
        }
      })
      .build();
  private final EtcdNameResolverProvider provider = new EtcdNameResolverProvider();

  @Test
  void isRegisteredThroughMetaInfServices() {
    assertThat(ServiceLoader.load(NameResolverProvider.class))
        .anySatisfy(p -> assertThat(p).isInstanceOf(EtcdNameResolverProvider.class));
    assertThat(provider.getDefaultScheme()).isEqualTo("etcd");
  }

  @Test
  void theCallersZoneComesFromTheEnvironmentWhenSetAndValid() {
    assertThat(EtcdNameResolverProvider.zoneFrom(java.util.Map.of("STEELYARD_ZONE", "eu-1a")::get))
        .isEqualTo("eu-1a");
    assertThat(EtcdNameResolverProvider.zoneFrom(java.util.Map.of("STEELYARD_ZONE", "")::get))
        .isNull();
    assertThat(EtcdNameResolverProvider.zoneFrom(java.util.Map.of("STEELYARD_ZONE", "eu 1a")::get))
        .isNull();
    assertThat(EtcdNameResolverProvider.zoneFrom(java.util.Map.<String, String>of()::get)).isNull();
  }

  @Test
  void aBuilderZoneIsCheckedAndSetOnce() {
    EtcdNameResolverProvider.Builder builder = EtcdNameResolverProvider.builder().zone("eu-1a");
    assertThatThrownBy(() -> builder.zone("eu-1b")).hasMessage("zone already set");
    EtcdNameResolverProvider.Builder withEnvironment = EtcdNameResolverProvider.builder().environment(name -> null);
    assertThatThrownBy(() -> withEnvironment.environment(name -> null)).hasMessage("environment already set");
    assertThatThrownBy(() -> EtcdNameResolverProvider.builder().zone("eu 1a"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("zone: 'eu 1a'");
  }

  @Test
  void otherSchemesAreNotOurs() {
    assertThat(provider.newNameResolver(URI.create("dns:///greeter"), args)).isNull();
  }

  @Test
  void invalidTargetFailsWithAClearStatusInsteadOfThrowing() {
    NameResolver resolver = provider.newNameResolver(URI.create("etcd:///a/b"), args);
    assertThat(resolver).isNotNull();
    List<Status> errors = new ArrayList<>();
    syncContext.execute(() -> resolver.start(new NameResolver.Listener2() {
      @Override
      public void onResult(NameResolver.ResolutionResult result) {
        throw new AssertionError("no result expected");
      }

      @Override
      public void onError(Status error) {
        errors.add(error);
      }
    }));
    assertThat(errors).singleElement().satisfies(s -> {
      assertThat(s.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
      assertThat(s.getDescription()).contains("etcd:///a/b").contains("expected: etcd:///SERVICE");
    });
    resolver.shutdown();
  }

  @Test
  void validTargetYieldsAResolverNamedAfterTheService() {
    NameResolver resolver = provider.newNameResolver(URI.create("etcd://127.0.0.1:1/greeter"), args);
    assertThat(resolver.getServiceAuthority()).isEqualTo("greeter");
    resolver.shutdown(); // never started: nothing to release
  }

  @Test
  void builderRefusesASettingTwiceAndOutOfRangeValues() {
    EtcdNameResolverProvider.Builder b = EtcdNameResolverProvider.builder()
        .debounce(java.time.Duration.ZERO);
    assertThatThrownBy(() -> b.debounce(java.time.Duration.ofMillis(5)))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("debounce already set");
    assertThatThrownBy(() -> EtcdNameResolverProvider.builder().debounce(java.time.Duration.ofSeconds(2)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("expected: 0..1s");
    assertThatThrownBy(() -> EtcdNameResolverProvider.builder().priority(5))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("expected: 0..4");
    assertThatThrownBy(() -> EtcdNameResolverProvider.builder()
            .backoff(java.time.Duration.ofSeconds(2), java.time.Duration.ofSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("backoff max");
  }

  @Test
  void programmaticProviderCarriesItsPriority() {
    assertThat(EtcdNameResolverProvider.builder().priority(2).build().priority()).isEqualTo(2);
    assertThat(EtcdNameResolverProvider.builder().build().priority())
        .isGreaterThan(provider.priority());
    assertThat(provider.priority()).isEqualTo(EtcdNameResolverProvider.DEFAULT_PRIORITY);
  }

  @Test
  void targetsWithoutASchemeStayDnsWithEtcdProvidersRegistered() {
    io.grpc.NameResolverRegistry registry = io.grpc.NameResolverRegistry.getDefaultRegistry();
    EtcdNameResolverProvider configured = EtcdNameResolverProvider.builder().build();
    registry.register(configured);
    try {
      assertThat(registry.getProviderForScheme("etcd")).isSameAs(configured);
      assertThat(registry.asFactory().getDefaultScheme()).isEqualTo("dns");
    } finally {
      registry.deregister(configured);
    }
  }
}
