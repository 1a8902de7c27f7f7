package io.steelyard.balancer;

import io.grpc.ManagedChannel;
import io.steelyard.testkit.grpc.StaticResolverProvider;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * What the balancer's channel tests share: a {@link StaticResolverProvider} of its own scheme for
 * the test class, three fresh {@link LoopbackCluster} servers ({@code a}, {@code b}, {@code c})
 * for each test, and the channel the test opens, shut down after it with the servers.
 *
 * <pre>{@code
 * @RegisterExtension static final LoopbackFixture fixture = new LoopbackFixture("static-weighted");
 * ...
 * fixture.channel = Grpc.newChannelBuilder(
 *     fixture.resolver.target("dist", fixture.cluster.endpoints(1, 2, 5)), ...).build();
 * }</pre>
 */
final class LoopbackFixture
    implements BeforeAllCallback, AfterAllCallback, BeforeEachCallback, AfterEachCallback {

  private final String scheme;
  StaticResolverProvider resolver;
  LoopbackCluster cluster;
  /** The test's channel, if it opened one; shut down after the test. */
  @Nullable ManagedChannel channel;

  LoopbackFixture(String scheme) {
    this.scheme = scheme;
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    resolver = StaticResolverProvider.register(scheme);
  }

  @Override
  public void afterAll(ExtensionContext context) {
    resolver.close();
  }

  @Override
  public void beforeEach(ExtensionContext context) throws Exception {
    cluster = new LoopbackCluster(List.of("a", "b", "c"));
  }

  @Override
  public void afterEach(ExtensionContext context) throws Exception {
    if (channel != null) {
      channel.shutdownNow();
      channel.awaitTermination(5, TimeUnit.SECONDS);
      channel = null;
    }
    cluster.close();
  }
}
