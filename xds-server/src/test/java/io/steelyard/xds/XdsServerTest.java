package io.steelyard.xds;

import static org.assertj.core.api.Assertions.assertThat;

import io.steelyard.registry.EtcdConnection;
import org.junit.jupiter.api.Test;

/**
 * What the server says at start about where it listens; etcd is never reached here (an endpoint
 * nothing listens on), as the warning comes before the first view.
 */
class XdsServerTest {

  private static final EtcdConnection NO_ETCD = EtcdConnection.of("http://127.0.0.1:1");

  @Test
  void plaintextBeyondLoopbackWithInsecureListenIsLoggedAtWarnAtStart() {
    try (Logs logs = Logs.of(XdsServer.class);
        XdsServer xds = XdsServer.builder(NO_ETCD).host("0.0.0.0").port(0).insecureListen().build().start()) {
      assertThat(logs.lines()).filteredOn(l -> l.startsWith("WARN")).containsExactly(
          "WARN Serving xDS in plaintext on 0.0.0.0:" + xds.port() + ", beyond this host (--insecure-listen):"
              + " anyone who reaches it reads every served service");
    }
  }

  @Test
  void plaintextOnLoopbackIsNoWarning() {
    try (Logs logs = Logs.of(XdsServer.class);
        XdsServer xds = XdsServer.builder(NO_ETCD).port(0).insecureListen().build().start()) {
      assertThat(logs.lines()).noneMatch(l -> l.startsWith("WARN"));
    }
  }
}
