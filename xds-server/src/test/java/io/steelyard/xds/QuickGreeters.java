package io.steelyard.xds;

import io.steelyard.examples.GreeterServer;
import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;

/**
 * Greeter servers for the xDS ITs: a lease of 5 s, no drain delay and a grace of 1 s, so that a
 * drain, a stop or a lost lease reaches the clients within seconds.
 */
final class QuickGreeters {

  private QuickGreeters() {}

  /** A builder for {@code service} registered in {@code etcd}, to finish and start. */
  static GreeterServer.Builder builder(EtcdCluster etcd, String service) {
    return GreeterServer.builder()
        .endpoints(etcd.endpoints())
        .service(service)
        .ttl(Duration.ofSeconds(5))
        .drainDelay(Duration.ZERO)
        .grace(Duration.ofSeconds(1));
  }
}
