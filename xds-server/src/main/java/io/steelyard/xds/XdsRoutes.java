package io.steelyard.xds;

import com.google.protobuf.UInt32Value;
import io.envoyproxy.envoy.config.route.v3.Route;
import io.envoyproxy.envoy.config.route.v3.RouteAction;
import io.envoyproxy.envoy.config.route.v3.RouteConfiguration;
import io.envoyproxy.envoy.config.route.v3.RouteMatch;
import io.envoyproxy.envoy.config.route.v3.VirtualHost;
import io.envoyproxy.envoy.config.route.v3.WeightedCluster;
import io.steelyard.balancer.spi.EndpointSelection;
import io.steelyard.registry.ServiceInstance;
import io.steelyard.xds.MappedConfig.MethodRule;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.annotation.Nullable;

/**
 * A service's clusters and routes under its {@link MappedConfig}: which instances each cluster
 * holds, and the route configuration that sends calls to them.
 *
 * <p><b>Clusters.</b> Cluster {@code SERVICE} always exists. Without a selection it holds every
 * instance; under a {@code subset} the instances of the first selector that matches an instance
 * taking calls (weight above 0), else every instance ({@code fallback: any}) or none ({@code
 * none}: calls fail with UNAVAILABLE, as in Java). Under a {@code split}, entry {@code i} is the
 * cluster {@code SERVICE/i} of the instances its selector matches, while {@code SERVICE} keeps
 * every instance. Names with a {@code /} are never service names, so they cannot collide.
 *
 * <p><b>Routes.</b> One per method rule (exact methods, then services, then every call) and a
 * last one for every call, each with the rule's timeout and retry. Each sends its calls to
 * {@code SERVICE}, or under a split to weighted clusters (gRFC A28) whose weights are the
 * entries' percents in hundredths. As in Java, an entry whose cluster has no instance taking
 * calls gives its share to the others, in proportion to theirs (evenly when theirs are all 0),
 * and with none left every call goes to {@code SERVICE}. The control plane sees registrations, not
 * connections: a registered instance that a client cannot reach still holds its entry's share
 * there.
 *
 * <p>Pure: the same input gives the same output.
 */
final class XdsRoutes {

  private XdsRoutes() {}

  /** The cluster of split entry {@code entry}. */
  static String splitCluster(String service, int entry) {
    return service + "/" + entry;
  }

  /** The service a resource name belongs to: the name up to its first {@code /}. */
  static String serviceOf(String resourceName) {
    int slash = resourceName.indexOf('/');
    return slash < 0 ? resourceName : resourceName.substring(0, slash);
  }

  /** Each cluster of {@code service} with its instances, {@code SERVICE} first, in order. */
  static Map<String, List<ServiceInstance>> clusters(
      String service, List<ServiceInstance> instances, MappedConfig config) {
    Map<String, List<ServiceInstance>> out = new LinkedHashMap<>();
    EndpointSelection selection = config.selection();
    if (selection == null || selection.isSplit()) {
      out.put(service, instances);
    } else {
      out.put(service, selected(instances, selection));
    }
    if (config.splits()) {
      for (int i = 0; i < selection.selectors().size(); i++) {
        out.put(splitCluster(service, i), matching(instances, selection.selectors().get(i)));
      }
    }
    return out;
  }

  private static List<ServiceInstance> selected(List<ServiceInstance> instances, EndpointSelection subset) {
    for (Map<String, String> selector : subset.selectors()) {
      List<ServiceInstance> match = matching(instances, selector);
      if (takingCalls(match)) {
        return match;
      }
    }
    return subset.fallbackToAny() ? instances : List.of();
  }

  private static List<ServiceInstance> matching(List<ServiceInstance> instances, Map<String, String> selector) {
    List<ServiceInstance> out = new ArrayList<>();
    for (ServiceInstance i : instances) {
      if (EndpointSelection.matches(selector, i.metadata())) {
        out.add(i);
      }
    }
    return out;
  }

  private static boolean takingCalls(List<ServiceInstance> instances) {
    return instances.stream().anyMatch(i -> i.weight() > 0);
  }

  /** The route configuration of {@code service}, over {@code clusters} ({@link #clusters}). */
  static RouteConfiguration routeConfiguration(
      String service, MappedConfig config, Map<String, List<ServiceInstance>> clusters) {
    RouteAction.Builder target = RouteAction.newBuilder();
    WeightedCluster split = config.splits() ? weightedClusters(service, config.selection(), clusters) : null;
    if (split != null) {
      target.setWeightedClusters(split);
    } else {
      target.setCluster(service);
    }
    VirtualHost.Builder host = VirtualHost.newBuilder().setName(service).addDomains("*");
    boolean catchAll = false;
    for (MethodRule rule : config.methods()) {
      host.addRoutes(route(rule, target));
      catchAll |= rule.path().isEmpty();
    }
    if (!catchAll) {
      host.addRoutes(route(new MethodRule("", true, null, null), target));
    }
    return RouteConfiguration.newBuilder().setName(service).addVirtualHosts(host).build();
  }

  private static Route route(MethodRule rule, RouteAction.Builder target) {
    RouteAction.Builder action = target.clone();
    if (rule.timeout() != null) {
      action.setMaxStreamDuration(RouteAction.MaxStreamDuration.newBuilder()
          .setMaxStreamDuration(rule.timeout())
          .setGrpcTimeoutHeaderMax(rule.timeout()));
    }
    if (rule.retry() != null) {
      action.setRetryPolicy(rule.retry());
    }
    RouteMatch.Builder match = RouteMatch.newBuilder();
    if (rule.prefix()) {
      match.setPrefix(rule.path());
    } else {
      match.setPath(rule.path());
    }
    return Route.newBuilder().setMatch(match).setRoute(action).build();
  }

  /** The split's live entries as weighted clusters, or null when no entry has an instance taking calls. */
  @Nullable
  private static WeightedCluster weightedClusters(
      String service, EndpointSelection split, Map<String, List<ServiceInstance>> clusters) {
    List<Integer> live = new ArrayList<>();
    int sum = 0;
    for (int i = 0; i < split.selectors().size(); i++) {
      if (takingCalls(clusters.get(splitCluster(service, i)))) {
        live.add(i);
        sum += split.basisPoints(i);
      }
    }
    if (live.isEmpty()) {
      return null;
    }
    WeightedCluster.Builder out = WeightedCluster.newBuilder();
    for (int i : live) {
      int weight = sum == 0 ? 1 : split.basisPoints(i);
      if (weight > 0) { // a 0 % entry takes no calls: it is left out rather than sent weight 0
        out.addClusters(WeightedCluster.ClusterWeight.newBuilder()
            .setName(splitCluster(service, i)).setWeight(UInt32Value.of(weight)));
      }
    }
    return out.build();
  }
}
