package io.steelyard.benchmarks;

import io.grpc.Attributes;
import io.grpc.ConnectivityState;
import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer;
import io.grpc.LoadBalancerProvider;
import io.grpc.NameResolver;
import io.grpc.SynchronizationContext;
import io.grpc.util.ForwardingLoadBalancerHelper;
import io.steelyard.registry.EndpointWeights;
import io.steelyard.testkit.grpc.FakeHelper;
import io.steelyard.testkit.grpc.FakeHelper.FakeSubchannel;
import io.steelyard.testkit.time.FakeScheduler;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ScheduledExecutorService;
import javax.annotation.Nullable;

/**
 * Drives a real {@link LoadBalancerProvider} the way a channel would, through the testkit's
 * {@link FakeHelper}, with subchannels that become READY on demand. This is how every policy's
 * picker is obtained for the benchmarks, grpc-java's {@code round_robin} included.
 */
final class BenchHelper {

  private final FakeHelper helper = new FakeHelper();

  /**
   * Timers of the balancer: run by {@link #readyPicker} once every endpoint is READY, so that a
   * rebuild the balancer put off to the end of its window (steelyard's policies do, for a burst
   * of READY endpoints) is published before the picker is measured.
   */
  private final FakeScheduler timers = new FakeScheduler();

  private final LoadBalancer balancer;

  BenchHelper(LoadBalancerProvider provider) {
    this(provider, null);
  }

  /** A helper whose channel passes {@code args} (e.g. a metrics observer) to its balancer. */
  BenchHelper(LoadBalancerProvider provider, @Nullable NameResolver.Args args) {
    this.balancer =
        provider.newLoadBalancer(
            new ForwardingLoadBalancerHelper() {
              @Override
              protected LoadBalancer.Helper delegate() {
                return helper;
              }

              @Override
              public ScheduledExecutorService getScheduledExecutorService() {
                return timers;
              }

              @Override
              public NameResolver.Args getNameResolverArgs() {
                return args != null ? args : helper.getNameResolverArgs();
              }
            });
  }

  /** Name-resolver arguments carrying {@code key = value}, as a channel builder would make them. */
  static <T> NameResolver.Args argsWith(NameResolver.Args.Key<T> key, T value) {
    return NameResolver.Args.newBuilder()
        .setDefaultPort(443)
        .setProxyDetector(address -> null)
        .setSynchronizationContext(
            new SynchronizationContext(
                (t, e) -> {
                  throw new IllegalStateException(e);
                }))
        .setServiceConfigParser(
            new NameResolver.ServiceConfigParser() {
              @Override
              public NameResolver.ConfigOrError parseServiceConfig(Map<String, ?> rawServiceConfig) {
                return NameResolver.ConfigOrError.fromConfig(rawServiceConfig);
              }
            })
        .setArg(key, value)
        .build();
  }

  /** Endpoints 10.x.y.z:443 with {@code weights}, in order. */
  static List<EquivalentAddressGroup> endpoints(int[] weights) {
    List<EquivalentAddressGroup> eags = new ArrayList<>(weights.length);
    for (int i = 0; i < weights.length; i++) {
      InetSocketAddress address =
          InetSocketAddress.createUnresolved(
              "10." + (i >> 16 & 255) + "." + (i >> 8 & 255) + "." + (i & 255), 443);
      eags.add(EndpointWeights.withWeight(new EquivalentAddressGroup(address), weights[i]));
    }
    return eags;
  }

  void resolve(List<EquivalentAddressGroup> eags) {
    resolve(eags, null);
  }

  /** Resolves {@code eags} with a parsed policy {@code config} (null: the policy's default). */
  void resolve(List<EquivalentAddressGroup> eags, @Nullable Object config) {
    helper
        .syncContext()
        .execute(
            () ->
                balancer.acceptResolvedAddresses(
                    LoadBalancer.ResolvedAddresses.newBuilder()
                        .setAddresses(eags)
                        .setAttributes(Attributes.EMPTY)
                        .setLoadBalancingPolicyConfig(config)
                        .build()));
  }

  /**
   * Resolves {@code weights} and makes every endpoint READY; returns the READY picker.
   *
   * <p>Readiness is read from connectivity state, never from picks: every subchannel the balancer
   * created is moved to READY and the balancer must then publish READY. Picking until every
   * endpoint has been seen would not end for {@code weighted_least_request}, whose idle picks go
   * to the heaviest of its candidates, so the lightest endpoints are rarely or never picked.
   */
  LoadBalancer.SubchannelPicker readyPicker(int[] weights) {
    return readyPicker(endpoints(weights), null);
  }

  /** As {@link #readyPicker(int[])}, over {@code eags} under a parsed policy {@code config}. */
  LoadBalancer.SubchannelPicker readyPicker(
      List<EquivalentAddressGroup> eags, @Nullable Object config) {
    resolve(eags, config);
    for (FakeSubchannel sc : List.copyOf(helper.createdSubchannels())) {
      helper.deliver(sc, ConnectivityState.READY);
    }
    runTimers();
    if (helper.lastState() != ConnectivityState.READY) {
      throw new IllegalStateException("balancer is " + helper.lastState() + ", expected READY");
    }
    return helper.lastPicker();
  }

  /** Delivers {@code state} to {@code subchannel}, in the SynchronizationContext. */
  void deliver(FakeSubchannel subchannel, ConnectivityState state) {
    helper.deliver(subchannel, state);
  }

  /** Runs every timer the balancer set (a rebuild put off to a window's end among them). */
  void runTimers() {
    timers.forwardTime(Duration.ofSeconds(1));
  }

  /** The picker the balancer published last. */
  LoadBalancer.SubchannelPicker picker() {
    return helper.lastPicker();
  }

  /** The channel's subchannels, in creation order (one per endpoint). */
  List<FakeSubchannel> subchannels() {
    return helper.createdSubchannels();
  }

  /** Lets go of every published picker but the last, so a long run does not retain them all. */
  void forgetHistory() {
    helper.forgetHistory();
  }

  void shutdown() {
    helper.syncContext().execute(balancer::shutdown);
  }
}
