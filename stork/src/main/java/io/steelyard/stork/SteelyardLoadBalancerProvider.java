package io.steelyard.stork;

import io.smallrye.stork.api.LoadBalancer;
import io.smallrye.stork.api.ServiceDiscovery;
import io.smallrye.stork.api.config.LoadBalancerAttribute;
import io.smallrye.stork.api.config.LoadBalancerType;
import io.smallrye.stork.spi.LoadBalancerProvider;
import io.steelyard.balancer.spi.SlowStartConfig;
import io.steelyard.balancer.spi.ZoneRoutingConfig;
import java.time.Duration;
import java.util.Map;
import java.util.Set;

/**
 * Stork load balancer {@code steelyard-weighted}: weighted, drain-aware, zone-aware selection
 * with optional slow start, by the rules of steelyard's gRPC balancers.
 *
 * <pre>{@code
 * stork.greeter.load-balancer.type=steelyard-weighted
 * stork.greeter.load-balancer.slow-start-window=30S
 * }</pre>
 *
 * Zone routing applies when the caller's zone is known: the {@code steelyard} discovery's {@code
 * zone} attribute, else {@code STEELYARD_ZONE}. With another discovery it reads the {@code
 * weight} label and is zone-blind.
 */
@LoadBalancerType(SteelyardLoadBalancerProvider.TYPE)
@LoadBalancerAttribute(name = "slow-start-window", description = "Ramp newly seen and undrained instances over this window (Stork's duration format: 30S, 2M); unset: no slow start.")
@LoadBalancerAttribute(name = "slow-start-aggression", description = "Ramp curve exponent, > 0 (1: linear); default 1.")
@LoadBalancerAttribute(name = "slow-start-min-weight-percent", description = "Floor of a ramping instance's weight, 1..100 %; default 10.")
@LoadBalancerAttribute(name = "zone-routing", description = "Keep calls in the caller's zone while it has capacity; default true.")
@LoadBalancerAttribute(name = "min-local-endpoints", description = "Below this many instances that can take calls in the caller's zone, route to every zone; default 1.")
public final class SteelyardLoadBalancerProvider
    implements LoadBalancerProvider<SteelyardWeightedConfiguration> {

  /** The type Stork configuration names: {@value}. */
  public static final String TYPE = "steelyard-weighted";

  private static final Set<String> KNOWN = Set.of(
      "slow-start-window", "slow-start-aggression", "slow-start-min-weight-percent",
      "zone-routing", "min-local-endpoints");

  /** Stork instantiates providers through the generated loader. */
  public SteelyardLoadBalancerProvider() {}

  @Override
  public LoadBalancer createLoadBalancer(
      SteelyardWeightedConfiguration config, ServiceDiscovery serviceDiscovery) {
    String service = serviceDiscovery instanceof SteelyardServiceDiscovery s ? s.service() : "?";
    Attributes attrs = new Attributes(service, "load-balancer '" + TYPE + "'", config.parameters());
    attrs.checkKnown(KNOWN, Map.of());
    Duration window = attrs.duration("slow-start-window", config.getSlowStartWindow(), Duration.ofMillis(1));
    double aggression = attrs.positive("slow-start-aggression", config.getSlowStartAggression(),
        SlowStartConfig.MAX_AGGRESSION, SlowStartConfig.DEFAULT_AGGRESSION);
    int floor = attrs.integer("slow-start-min-weight-percent", config.getSlowStartMinWeightPercent(),
        1, 100, SlowStartConfig.DEFAULT_MIN_WEIGHT_PERCENT);
    SlowStartConfig slowStart = window == null ? null : new SlowStartConfig(window.toNanos(), aggression, floor);
    boolean zoneRouting = attrs.bool("zone-routing", config.getZoneRouting(), true);
    int minLocal = attrs.integer("min-local-endpoints", config.getMinLocalEndpoints(),
        1, ZoneRoutingConfig.MAX_MIN_LOCAL_ENDPOINTS, ZoneRoutingConfig.DEFAULT_MIN_LOCAL_ENDPOINTS);
    return new SteelyardLoadBalancer(service, serviceDiscovery, slowStart, zoneRouting, minLocal, System::nanoTime);
  }
}
