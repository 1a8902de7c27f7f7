package io.steelyard.it.faults;

import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.EtcdMember;
import io.steelyard.testkit.FaultProxy;
import java.net.InetSocketAddress;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * One component's own way to each etcd member: a {@link FaultProxy} per member. While {@link
 * #only(int)} holds, the component reaches that member alone, so every stream it opens (a
 * watch, a lease keepalive) lands there; {@link #all()} then opens the others without moving
 * what is already open (gRPC streams stay on their connection). That is how a test knows which
 * member a client or an agent is connected to instead of guessing.
 */
final class Route implements AutoCloseable {

  private final List<FaultProxy> proxies = new ArrayList<>();

  Route(EtcdCluster etcd, String name) {
    for (EtcdMember member : etcd.members()) {
      URI uri = member.clientEndpoint();
      proxies.add(FaultProxy.start(name + "-" + member.name(), new InetSocketAddress(uri.getHost(), uri.getPort())));
    }
  }

  /** {@code http://127.0.0.1:P0,http://127.0.0.1:P1,...}: distinct per route, so per component. */
  String endpoints() {
    return proxies.stream().map(p -> p.uri("http").toString()).collect(Collectors.joining(","));
  }

  /** Only {@code member} is reachable; connections to the others hang, as behind a partition. */
  void only(int member) {
    for (int i = 0; i < proxies.size(); i++) {
      if (i == member) {
        proxies.get(i).pass();
      } else {
        proxies.get(i).blackhole();
      }
    }
  }

  /** Every member is reachable; what was held is delivered. */
  void all() {
    proxies.forEach(FaultProxy::pass);
  }

  @Override
  public void close() {
    proxies.forEach(FaultProxy::close);
  }
}
