package io.steelyard.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.ForwardingChannelBuilder2;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannelBuilder;
import io.grpc.NameResolver;
import io.steelyard.discovery.EtcdNameResolverProvider;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.grpc.client.GrpcChannelBuilderCustomizer;

/**
 * The starter's channel customizer: a policy the application names for a channel becomes the
 * etcd resolver's fallback for it (so a registry without a config leaves the application's
 * choice in force); with none named, Spring gRPC's implicit {@code round_robin} is not passed on
 * and the resolver's {@code weighted_random} applies.
 */
class ChannelFallbackPolicyTest {

  /** Records the resolver arguments a customizer sets. */
  private static final class Recording extends ForwardingChannelBuilder2<Recording> {
    final ManagedChannelBuilder<?> delegate =
        Grpc.newChannelBuilder("etcd:///who", InsecureChannelCredentials.create());
    final Map<NameResolver.Args.Key<?>, Object> args = new HashMap<>();

    @Override
    protected ManagedChannelBuilder<?> delegate() {
      return delegate;
    }

    @Override
    public <X> Recording setNameResolverArg(NameResolver.Args.Key<X> key, X value) {
      args.put(key, value);
      return this;
    }
  }

  private static Recording customize(Map<String, Object> properties) {
    StandardEnvironment env = new StandardEnvironment();
    env.getPropertySources().addFirst(new MapPropertySource("test", properties));
    GrpcChannelBuilderCustomizer<Recording> customizer = new SteelyardDiscoveryAutoConfiguration()
        .steelyardChannelBuilderCustomizer(EtcdNameResolverProvider.builder().build(), env);
    Recording builder = new Recording();
    customizer.customize("who", builder);
    return builder;
  }

  @Test
  void aPolicyNamedForTheChannelIsTheResolversFallback() {
    Recording b = customize(Map.of(
        "spring.grpc.client.channels.who.default-load-balancing-policy", "weighted_least_request"));

    assertThat(b.args.get(EtcdNameResolverProvider.FALLBACK_SERVICE_CONFIG)).isEqualTo(
        Map.of("loadBalancingConfig", List.of(Map.of("weighted_least_request", Map.of()))));
  }

  @Test
  void thePolicyOfTheDefaultChannelCountsWhenTheChannelNamesNone() {
    Recording b = customize(Map.of(
        "spring.grpc.client.default-channel.default-load-balancing-policy", "weighted_round_robin_static"));

    assertThat(b.args.get(EtcdNameResolverProvider.FALLBACK_SERVICE_CONFIG)).isEqualTo(
        Map.of("loadBalancingConfig", List.of(Map.of("weighted_round_robin_static", Map.of()))));
  }

  @Test
  void noPolicyNamedLeavesTheResolversWeightedRandom() {
    Recording b = customize(Map.of());

    assertThat(b.args).containsKey(EtcdNameResolverProvider.CHANNEL_PROVIDER);
    assertThat(b.args).doesNotContainKey(EtcdNameResolverProvider.FALLBACK_SERVICE_CONFIG);
  }
}
