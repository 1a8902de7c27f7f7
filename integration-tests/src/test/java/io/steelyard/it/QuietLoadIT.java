package io.steelyard.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.steelyard.testkit.EtcdCluster;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A minute of load through a 3-member etcd with auth: two greeter servers, greeter-client and
 * {@code steelyard watch}, each with its least-privilege user. No process logs etcd's {@code
 * GOAWAY ENHANCE_YOUR_CALM too_many_pings} nor a java.util.logging-formatted line.
 *
 * <p>Plain HTTP on purpose: etcd 3.4 serves gRPC over TLS through Go's HTTP/2 server, which does
 * not enforce keepalive policy, so only a plain port shows the GOAWAY this test guards against
 * (with EtcdConnection's old {@code keepaliveWithoutCalls(true)} this test fails).
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class QuietLoadIT {

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().members(3).rootPassword("rootpw").build();

  /** Long enough for three 10 s keepalive strikes on an idle connection, with slack. */
  private static final Duration LOAD = Duration.ofSeconds(55);

  @TempDir Path dir;

  @Test
  void aMinuteOfLoadThroughThreeMembersLogsNoTooManyPingsAndNoJulLine() throws Exception {
    Children.addSteelyardUsers(etcd);
    try (Children children = new Children(dir, etcd, null)) {
      Children.Child a = children.server("greeter", 1);
      Children.Child b = children.server("greeter", 3);
      Children.Child watch = children.start(Children.CLI, "operator:operatorpw", "watch", "greeter");
      Children.Child load = children.start(Children.CLIENT, "caller:callerpw",
          "--service", "greeter", "--requests", "100000000", "--concurrency", "2", "--warmup", "0s");

      await("a minute of load with every process alive")
          .during(LOAD)
          .atMost(LOAD.plusSeconds(15))
          .until(() -> List.of(a, b, watch, load).stream().allMatch(c -> c.process().isAlive()));

      for (Children.Child c : children.started()) {
        String logs = c.out() + c.err();
        assertThat(logs).as(c.command()).doesNotContain("too_many_pings").doesNotContain("ENHANCE_YOUR_CALM");
        assertThat(Children.JUL_LINE.matcher(logs).find()).as("a java.util.logging line: %s", c.describe()).isFalse();
      }
    }
  }
}
