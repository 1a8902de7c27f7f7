package io.steelyard.benchmarks;

import io.grpc.ConnectivityState;
import io.grpc.ConnectivityStateInfo;
import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer;
import io.grpc.LoadBalancerProvider;
import io.grpc.LoadBalancerRegistry;
import io.grpc.ManagedChannel;
import io.grpc.NameResolver;
import io.grpc.NameResolverProvider;
import io.grpc.NameResolverRegistry;
import io.grpc.Server;
import io.grpc.StatusOr;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.inprocess.InProcessSocketAddress;
import io.grpc.util.ForwardingLoadBalancerHelper;
import io.grpc.util.ForwardingSubchannel;
import io.steelyard.registry.EndpointWeights;
import java.lang.management.ManagementFactory;
import java.net.SocketAddress;
import java.net.URI;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * What a channel spends to connect to a large service: a real {@link ManagedChannel} whose
 * resolver answers with {@code --endpoints} in-process servers at once, from leaving idle until
 * the policy has published its picker over every endpoint READY. Measured in CPU time of the
 * whole process (the channel, its transports, the servers' side, the balancer's picker builds),
 * so that a loaded machine stretches the wall time but not the figure.
 *
 * <p>Every endpoint becomes READY a moment after the one before, as fast as in-process
 * transports start: the burst of READY transitions a client sees when it connects to a large
 * service. A policy that rebuilds its picker on each one pays n builds of up to n endpoints.
 *
 * <p>The policy runs under a probe that counts READY transitions of subchannels and notes the
 * process CPU time at each state the policy publishes; the figure ends at the last publish after
 * the last READY (a quiet second later, nothing more was published). One policy per JVM, so that
 * none runs with code the JIT compiled for another; {@code scripts/bench-connect} runs each.
 *
 * <pre>{@code
 * java -cp benchmarks/target/benchmarks.jar io.steelyard.benchmarks.ConnectBenchmark \
 *     --policy weighted_least_request --endpoints 10000 --weights uniform
 * }</pre>
 *
 * <p>Prints one line of {@code key=value} pairs.
 */
public final class ConnectBenchmark {

  private static final String SCHEME = "connect-bench";
  private static final String PROBE = "connect_bench_probe";
  private static final long QUIET_NANOS = TimeUnit.SECONDS.toNanos(1);

  private static final com.sun.management.OperatingSystemMXBean OS =
      (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

  private ConnectBenchmark() {}

  public static void main(String[] args) throws Exception {
    String policy = BenchArgs.stringArg(args, "--policy", "weighted_least_request");
    int n = BenchArgs.intArg(args, "--endpoints", 10_000);
    String weights = BenchArgs.stringArg(args, "--weights", "uniform");
    int timeoutSeconds = BenchArgs.intArg(args, "--timeout-seconds", 600);
    LoadBalancerProvider target = LoadBalancerRegistry.getDefaultRegistry().getProvider(policy);
    if (target == null) {
      System.err.println("policy: " + policy + " (expected: a registered load-balancing policy)");
      System.exit(2);
    }

    String prefix = "connect-bench-" + ProcessHandle.current().pid() + "-";
    int[] w = Weights.generate(weights, n, 42);
    List<EquivalentAddressGroup> endpoints = new ArrayList<>(n);
    List<Server> servers = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      servers.add(InProcessServerBuilder.forName(prefix + i).directExecutor().build().start());
      endpoints.add(
          EndpointWeights.withWeight(
              new EquivalentAddressGroup(new InProcessSocketAddress(prefix + i)), w[i]));
    }
    NameResolverRegistry.getDefaultRegistry().register(new FixedResolverProvider(endpoints));
    Probe probe = new Probe(target, n);
    LoadBalancerRegistry.getDefaultRegistry().register(probe);

    ManagedChannel channel =
        InProcessChannelBuilder.forTarget(SCHEME + ":///service")
            .defaultLoadBalancingPolicy(PROBE)
            .usePlaintext()
            .build();
    probe.startCpuNanos = OS.getProcessCpuTime();
    probe.startWallNanos = System.nanoTime();
    channel.getState(true);

    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds);
    while (true) {
      Thread.sleep(50);
      long now = System.nanoTime();
      synchronized (probe) {
        if (probe.ready == n && probe.lastReadyWallNanos > 0
            && now - Math.max(probe.lastPublishWallNanos, probe.lastReadyWallNanos) > QUIET_NANOS) {
          break;
        }
        if (now > deadline) {
          System.err.println(
              "timed out: " + probe.ready + " of " + n + " endpoints READY after "
                  + timeoutSeconds + " s");
          System.exit(1);
        }
      }
    }
    String line;
    synchronized (probe) {
      line = String.format(Locale.ROOT,
          "policy=%s endpoints=%d weights=%s cpu_connect_s=%.3f cpu_first_to_last_ready_s=%.3f"
              + " cpu_first_ready_to_final_picker_s=%.3f wall_connect_s=%.3f publishes=%d"
              + " publishes_after_first_ready=%d load=%s",
          policy, n, weights,
          (probe.finalPublishCpuNanos - probe.startCpuNanos) / 1e9,
          (probe.lastReadyCpuNanos - probe.firstReadyCpuNanos) / 1e9,
          (probe.finalPublishCpuNanos - probe.firstReadyCpuNanos) / 1e9,
          (probe.finalPublishWallNanos - probe.startWallNanos) / 1e9,
          probe.publishes, probe.publishesAfterFirstReady,
          HostStats.loadAverage().replace(' ', '/'));
    }
    System.out.println(line);
    channel.shutdownNow();
    for (Server s : servers) {
      s.shutdownNow();
    }
    System.exit(0);
  }

  /** Answers every resolution with the same endpoints. */
  private static final class FixedResolverProvider extends NameResolverProvider {
    private final List<EquivalentAddressGroup> endpoints;

    FixedResolverProvider(List<EquivalentAddressGroup> endpoints) {
      this.endpoints = endpoints;
    }

    @Override
    public NameResolver newNameResolver(URI targetUri, NameResolver.Args args) {
      if (!SCHEME.equals(targetUri.getScheme())) {
        return null;
      }
      return new NameResolver() {
        @Override
        public String getServiceAuthority() {
          return "service";
        }

        @Override
        public void start(Listener2 listener) {
          listener.onResult2(
              ResolutionResult.newBuilder()
                  .setAddressesOrError(StatusOr.fromValue(endpoints))
                  .build());
        }

        @Override
        public void shutdown() {}
      };
    }

    @Override
    public String getDefaultScheme() {
      return SCHEME;
    }

    @Override
    protected boolean isAvailable() {
      return true;
    }

    @Override
    protected int priority() {
      return 4;
    }

    @Override
    public Collection<Class<? extends SocketAddress>> getProducedSocketAddressTypes() {
      return List.of(InProcessSocketAddress.class);
    }
  }

  /**
   * The policy under test behind a helper that counts its subchannels' READY transitions and
   * notes the time of every state it publishes. Fields are written in the channel's
   * SynchronizationContext and read by the main thread, both under this object's monitor.
   */
  private static final class Probe extends LoadBalancerProvider {
    private final LoadBalancerProvider target;
    private final int endpoints;
    long startCpuNanos;
    long startWallNanos;
    int ready;
    long firstReadyCpuNanos;
    long lastReadyCpuNanos;
    long lastReadyWallNanos;
    int publishes;
    int publishesAfterFirstReady;
    long lastPublishWallNanos;
    long finalPublishCpuNanos;
    long finalPublishWallNanos;

    Probe(LoadBalancerProvider target, int endpoints) {
      this.target = target;
      this.endpoints = endpoints;
    }

    @Override
    public boolean isAvailable() {
      return true;
    }

    @Override
    public int getPriority() {
      return 5;
    }

    @Override
    public String getPolicyName() {
      return PROBE;
    }

    @Override
    public LoadBalancer newLoadBalancer(LoadBalancer.Helper channelHelper) {
      return target.newLoadBalancer(
          new ForwardingLoadBalancerHelper() {
            @Override
            protected LoadBalancer.Helper delegate() {
              return channelHelper;
            }

            @Override
            public LoadBalancer.Subchannel createSubchannel(
                LoadBalancer.CreateSubchannelArgs args) {
              return new CountingSubchannel(channelHelper.createSubchannel(args));
            }

            @Override
            public void updateBalancingState(
                ConnectivityState state, LoadBalancer.SubchannelPicker picker) {
              long cpu = OS.getProcessCpuTime();
              long wall = System.nanoTime();
              synchronized (Probe.this) {
                publishes++;
                if (ready > 0) {
                  publishesAfterFirstReady++;
                }
                lastPublishWallNanos = wall;
                if (ready == endpoints) {
                  finalPublishCpuNanos = cpu;
                  finalPublishWallNanos = wall;
                }
              }
              channelHelper.updateBalancingState(state, picker);
            }
          });
    }

    private void onReady() {
      long cpu = OS.getProcessCpuTime();
      synchronized (this) {
        ready++;
        if (ready == 1) {
          firstReadyCpuNanos = cpu;
        }
        if (ready == endpoints) {
          lastReadyCpuNanos = cpu;
          lastReadyWallNanos = System.nanoTime();
          // A policy that publishes nothing after the last READY has published its final
          // picker already; the figure then ends here.
          finalPublishCpuNanos = cpu;
          finalPublishWallNanos = lastReadyWallNanos;
        }
      }
    }

    private final class CountingSubchannel extends ForwardingSubchannel {
      private final LoadBalancer.Subchannel delegate;

      CountingSubchannel(LoadBalancer.Subchannel delegate) {
        this.delegate = delegate;
      }

      @Override
      protected LoadBalancer.Subchannel delegate() {
        return delegate;
      }

      @Override
      public void start(LoadBalancer.SubchannelStateListener listener) {
        delegate.start(
            new LoadBalancer.SubchannelStateListener() {
              private ConnectivityState last;

              @Override
              public void onSubchannelState(ConnectivityStateInfo state) {
                if (state.getState() == ConnectivityState.READY
                    && last != ConnectivityState.READY) {
                  onReady();
                }
                last = state.getState();
                listener.onSubchannelState(state);
              }
            });
      }
    }
  }
}
