package io.steelyard.balancer.internal;

import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer.ResolvedAddresses;
import io.steelyard.balancer.spi.ClientSubset;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import javax.annotation.Nullable;

/**
 * Where a policy's endpoint list meets {@link ClientSubset}: of the children the balancer
 * would make, keep this client's client subset. An endpoint is named by its first address ({@code
 * host:port}, the same text on every client), so every client ranks the same names.
 */
final class ClientSubsetting {

  private ClientSubsetting() {}

  /** {@code children} restricted to the client subset {@code config} asks for; all of them if none. */
  static Map<Object, ResolvedAddresses> keep(Map<Object, ResolvedAddresses> children, @Nullable Object config) {
    ClientSubset clientSubset = config instanceof WeightedPolicyConfig c ? c.clientSubset() : null;
    if (clientSubset == null || children.size() <= clientSubset.size()) {
      return children;
    }
    Set<Object> kept = clientSubset.choose(children.keySet(), k -> name(children.get(k).getAddresses().get(0)));
    Map<Object, ResolvedAddresses> out = new LinkedHashMap<>(kept.size() * 2);
    for (Map.Entry<Object, ResolvedAddresses> e : children.entrySet()) {
      if (kept.contains(e.getKey())) {
        out.put(e.getKey(), e.getValue());
      }
    }
    return out;
  }

  /** {@code 10.0.0.1:50051} for an IP socket address, else the address's own text. */
  static String name(EquivalentAddressGroup eag) {
    SocketAddress a = eag.getAddresses().get(0);
    if (a instanceof InetSocketAddress inet && inet.getAddress() != null) {
      return inet.getAddress().getHostAddress() + ":" + inet.getPort();
    }
    return a.toString();
  }
}
