package io.steelyard.examples;

import io.etcd.jetcd.Client;
import io.grpc.NameResolverRegistry;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.steelyard.balancer.BalancerMetrics;
import io.steelyard.balancer.spi.EndpointState;
import io.steelyard.discovery.DiscoveryMetrics;
import io.steelyard.discovery.EtcdNameResolverProvider;
import io.steelyard.registry.CertificateMetrics;
import io.steelyard.registry.DecodedValue;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.EtcdFlags;
import io.steelyard.registry.Localities;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.MetricsEndpoint;
import io.steelyard.registry.Validation;
import io.steelyard.registry.admin.InstanceStore;
import io.steelyard.registry.admin.RegisteredInstance;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import javax.annotation.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine;

/**
 * {@code bin/greeter-client}: sends N calls through {@code etcd://.../SERVICE} and prints, per
 * backend, the calls it answered, the observed share and the share expected from the weights
 * registered in etcd at the end of the run.
 */
@Command(
    name = "greeter-client",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description = {
      "Calls Greeter/SayHello N times through etcd:///NAME (the etcd resolver, configured with"
          + " --endpoints) and a weighted balancer, then"
          + " prints calls per backend, the observed share and the share expected from the"
          + " current weights in etcd.",
    },
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
      "0:done (and every --expect-* check held)",
      "1:could not run (etcd unreachable, no backend answered)",
      "2:usage error",
      "3:a --expect-* check failed"
    })
final class GreeterClientMain implements Callable<Integer> {

  @Mixin EtcdFlags etcdFlags = new EtcdFlags();

  @Option(names = "--service", paramLabel = "NAME", description = "service name (default: ${DEFAULT-VALUE})")
  String service = "greeter";

  @Option(names = "--requests", paramLabel = "N", description = "calls to send (default: ${DEFAULT-VALUE})")
  int requests = 1000;

  @Option(names = "--concurrency", paramLabel = "C",
      description = "callers sending at once, each one call at a time (default: ${DEFAULT-VALUE})")
  int concurrency = 4;

  @Option(names = "--policy", paramLabel = "P",
      description = "weighted_random, weighted_round_robin_static, weighted_least_request, or"
          + " grpc's round_robin/pick_first for comparison (default: ${DEFAULT-VALUE})")
  String policy = GreeterClient.DEFAULT_POLICY;

  @Option(names = "--zone", paramLabel = "ZONE",
      description = "this caller's zone: calls stay in it while its servers carry them"
          + " (target etcd:///NAME?zone=ZONE; default: $STEELYARD_ZONE, else zone-blind)")
  String zone;

  @Option(names = "--output", paramLabel = "table|json", description = "output format (default: ${DEFAULT-VALUE})")
  String output = "table";

  @Option(names = "--retry", paramLabel = "true|false", arity = "1",
      description = "retry calls that fail UNAVAILABLE (default: ${DEFAULT-VALUE})")
  boolean retry = true;

  @Option(names = "--deadline", paramLabel = "DURATION", converter = Durations.class,
      description = "per-call deadline (default: 5s)")
  Duration deadline = Duration.ofMillis(GreeterClient.DEFAULT_DEADLINE_MILLIS);

  @Option(names = "--warmup", paramLabel = "DURATION", converter = Durations.class,
      description = "before counting, call (uncounted) until every backend with a positive weight"
          + " has answered once, for at most this long; 0s = no warm-up (default: 10s)")
  Duration warmup = Duration.ofSeconds(10);

  @Option(names = "--expect-within", paramLabel = "POINTS",
      description = "fail (exit 3) unless every backend's observed share is within POINTS"
          + " percentage points of its expected share, and drained backends got no call")
  Double expectWithin;

  @Option(names = "--expect-no-calls", paramLabel = "ADDRESS",
      description = "fail (exit 3) if ADDRESS answered any counted call; repeatable")
  List<String> expectNoCalls = new ArrayList<>();

  @Option(names = "--max-failures", paramLabel = "N", description = "fail (exit 3) if more than N calls failed")
  Long maxFailures;

  @Option(names = "--health-service", paramLabel = "NAME",
      description = "grpc.health.v1 service asked about on each backend; '' (the default) is the"
          + " server's overall status, which every standard health server answers")
  String healthService = GreeterClient.DEFAULT_HEALTH_SERVICE;

  @Option(names = "--rate", paramLabel = "R",
      description = "open loop: start R calls per second, whatever the answers, for --duration"
          + " (instead of --requests), at most 1000 in flight")
  Integer rate;

  @Option(names = "--duration", paramLabel = "DURATION", converter = Durations.class,
      description = "how long the open loop of --rate runs (default: 10s)")
  Duration duration = Duration.ofSeconds(10);

  @Option(names = "--metrics-port", paramLabel = "P",
      description = "serve Prometheus metrics (balancer, discovery, calls per backend) at"
          + " http://127.0.0.1:P/metrics (0 = any free port) and print 'METRICS url=...'")
  Integer metricsPort;

  /** Calls in flight at most in the open loop: a stalled backend must not exhaust the JVM. */
  static final int MAX_IN_FLIGHT = 1000;

  @Override
  public Integer call() {
    if (!output.equals("table") && !output.equals("json")) {
      return usage("--output: '" + output + "' (expected: table or json)");
    }
    if (requests < 1) {
      return usage("--requests: " + requests + " (expected: >= 1)");
    }
    if (concurrency < 1 || concurrency > 256) {
      return usage("--concurrency: " + concurrency + " (expected: 1..256)");
    }
    if (rate != null && (rate < 1 || rate > 100_000)) {
      return usage("--rate: " + rate + " (expected: 1..100000 calls per second)");
    }
    if (duration.isNegative() || duration.isZero()) {
      return usage("--duration: " + Durations.format(duration) + " (expected: > 0)");
    }
    if (metricsPort != null && (metricsPort < 0 || metricsPort > 65535)) {
      return usage("--metrics-port: " + metricsPort + " (expected: 0..65535)");
    }
    if (!GreeterClient.policyAvailable(policy)) {
      return usage("--policy: '" + policy + "' is not a load-balancing policy on the classpath"
          + " (expected: weighted_random, weighted_round_robin_static, weighted_least_request,"
          + " round_robin or pick_first)");
    }
    KeyLayout layout;
    EtcdConnection etcd;
    try {
      layout = etcdFlags.layout();
      etcd = etcdFlags.connection();
      Validation.checkServiceName(service);
      if (zone != null) {
        Localities.checkName("--zone", zone);
      }
    } catch (IllegalArgumentException e) {
      return usage(e.getMessage());
    }
    // The etcd of --endpoints for every etcd:/// target of this process: a provider configured
    // in code, above the default (environment-configured) instance.
    NameResolverRegistry.getDefaultRegistry()
        .register(
            EtcdNameResolverProvider.builder()
                .connection(etcd)
                .layout(layout)
                .priority(EtcdNameResolverProvider.CONFIGURED_PRIORITY)
                .build());
    String target = "etcd:///" + service + (zone == null ? "" : "?zone=" + zone);
    MetricsEndpoint endpoint = null;
    PrometheusMeterRegistry prometheus = null;
    DiscoveryMetrics discoveryMetrics = new DiscoveryMetrics();
    try (Client etcdClient = etcd.connect()) {
      MeterRegistry meters;
      if (metricsPort != null) {
        prometheus = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        endpoint = MetricsEndpoint.start("127.0.0.1", metricsPort, prometheus::scrape);
        meters = prometheus;
        discoveryMetrics.bindTo(meters);
        new CertificateMetrics().bindTo(meters); // etcd's TLS files, for the process's life
        System.out.println("METRICS url=" + endpoint.url());
        System.out.flush();
      } else {
        meters = new SimpleMeterRegistry(); // only for the report of why calls failed
      }
      BalancerMetrics balancerMetrics = BalancerMetrics.of(meters);
      try (GreeterClient client =
          GreeterClient.forTarget(target).policy(policy).retry(retry).deadline(deadline)
              .healthService(healthService).metrics(balancerMetrics).build()) {
      InstanceStore store = new InstanceStore(etcdClient, layout, Duration.ofSeconds(5));
      warmUp(client, store);

      ConcurrentHashMap<String, LongAdder> answered = new ConcurrentHashMap<>();
      ConcurrentHashMap<String, LongAdder> failedBy = new ConcurrentHashMap<>();
      long started = System.nanoTime();
      if (rate != null) {
        openLoop(client, answered, failedBy);
      } else {
        closedLoop(client, answered, failedBy);
      }
      Map<String, Long> calls = new TreeMap<>();
      answered.forEach((k, v) -> calls.put(k, v.sum()));
      Map<String, Long> failures = new TreeMap<>();
      failedBy.forEach((k, v) -> failures.put(k, v.sum()));
      long elapsedMillis = (System.nanoTime() - started) / 1_000_000;
      Map<String, Integer> weights = weights(store);
      GreeterClientReport report = new GreeterClientReport(target, calls, failures, weights, elapsedMillis);
      List<String> problems = report.check(expectWithin, maxFailures);
      for (String a : expectNoCalls) {
        long c = calls.getOrDefault(a, 0L);
        if (c > 0) {
          problems.add(a + " answered " + c + " calls (expected: none)");
        }
      }
      System.out.print(output.equals("json") ? report.json(problems) : report.table(problems));
      System.out.flush();
      if (report.failed() > 0) {
        String why = whyNotReady(balancerMetrics.backends(service));
        if (report.succeeded() == 0) {
          System.err.println("greeter-client: no call succeeded: " + failures + "; " + why);
          return 1;
        }
        System.err.println("greeter-client: " + report.failed() + " calls failed " + failures + "; " + why);
      }
      if (!problems.isEmpty()) {
        for (String p : problems) {
          System.err.println("greeter-client: check failed: " + p);
        }
        return 3;
      }
      return 0;
      }
    } catch (RuntimeException e) {
      System.err.println("greeter-client: " + e.getMessage());
      return 1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      System.err.println("greeter-client: interrupted");
      return 1;
    } finally {
      discoveryMetrics.close();
      if (endpoint != null) {
        endpoint.close();
      }
      if (prometheus != null) {
        prometheus.close();
      }
    }
  }

  /** {@code --requests N}: {@code --concurrency} callers, each one call at a time. */
  private void closedLoop(GreeterClient client, ConcurrentHashMap<String, LongAdder> answered,
      ConcurrentHashMap<String, LongAdder> failedBy) throws InterruptedException {
    AtomicInteger remaining = new AtomicInteger(requests);
    List<Thread> callers = new ArrayList<>();
    for (int t = 0; t < concurrency; t++) {
      Thread caller = new Thread(() -> {
        while (remaining.getAndDecrement() > 0) {
          try {
            count(answered, client.sayHello("steelyard").getServerAddress());
          } catch (StatusRuntimeException e) {
            count(failedBy, e.getStatus().getCode().name());
          }
        }
      }, "caller-" + t);
      callers.add(caller);
      caller.start();
    }
    for (Thread caller : callers) {
      caller.join();
    }
  }

  /**
   * {@code --rate R --duration D}: starts a call every 1/R s whatever the answers (so that a
   * slow backend shows as latency, not as a lower rate), at most {@value #MAX_IN_FLIGHT} in
   * flight, then waits for the last answers.
   */
  private void openLoop(GreeterClient client, ConcurrentHashMap<String, LongAdder> answered,
      ConcurrentHashMap<String, LongAdder> failedBy) throws InterruptedException {
    long total = Math.max(1, rate * duration.toNanos() / 1_000_000_000L);
    long periodNanos = 1_000_000_000L / rate;
    Semaphore inFlight = new Semaphore(MAX_IN_FLIGHT);
    CountDownLatch done = new CountDownLatch((int) Math.min(total, Integer.MAX_VALUE));
    long next = System.nanoTime();
    for (long i = 0; i < total; i++) {
      long wait = next - System.nanoTime();
      if (wait > 0) {
        LockSupport.parkNanos(wait);
      }
      next += periodNanos;
      inFlight.acquire();
      client.sayHelloAsync("steelyard", (reply, error) -> {
        if (error == null) {
          count(answered, reply.getServerAddress());
        } else {
          count(failedBy, Status.fromThrowable(error).getCode().name());
        }
        inFlight.release();
        done.countDown();
      });
    }
    done.await(deadline.toMillis() + 10_000, TimeUnit.MILLISECONDS);
  }

  private static void count(ConcurrentHashMap<String, LongAdder> counts, String key) {
    counts.computeIfAbsent(key, k -> new LongAdder()).increment();
  }

  /**
   * Why calls failed, as the balancer sees the backends: none known, or each one's state and
   * the reason it is not READY (a health check's answer for the service asked, a refused
   * connection, ...).
   */
  static String whyNotReady(List<EndpointState> backends) {
    if (backends.isEmpty()) {
      return "no backend known to the balancer (none registered in etcd, or none resolved yet)";
    }
    long ready = backends.stream().filter(EndpointState::ready).count();
    StringBuilder sb = new StringBuilder()
        .append(backends.size()).append(backends.size() == 1 ? " backend" : " backends")
        .append(" known, ").append(ready).append(" READY: ");
    String sep = "";
    boolean health = false;
    for (EndpointState e : backends) {
      sb.append(sep).append(e.describe());
      health |= e.reason().startsWith("health_");
      sep = ", ";
    }
    if (health) {
      sb.append(" (--health-service NAME chooses the service asked; '' is the overall status)");
    }
    return sb.toString();
  }

  /** Calls until every backend with a positive weight in etcd has answered once (bounded). */
  private void warmUp(GreeterClient client, InstanceStore store) {
    if (warmup.isZero()) {
      return;
    }
    long deadlineNanos = System.nanoTime() + warmup.toNanos();
    TreeSet<String> waiting = new TreeSet<>();
    weights(store).forEach((a, w) -> {
      if (w > 0) {
        waiting.add(a);
      }
    });
    int sinceRelist = 0;
    while (!waiting.isEmpty() && System.nanoTime() < deadlineNanos) {
      try {
        waiting.remove(client.sayHello("warm-up").getServerAddress());
      } catch (StatusRuntimeException e) {
        if (e.getStatus().getCode() == Status.Code.DEADLINE_EXCEEDED) {
          break;
        }
      }
      if (++sinceRelist == 500) {
        // A backend that left etcd meanwhile will never answer; stop waiting for it.
        sinceRelist = 0;
        waiting.retainAll(weights(store).keySet());
      }
    }
  }

  /** Address to weight of every readable instance, as etcd has them now. */
  private Map<String, Integer> weights(InstanceStore store) {
    Map<String, Integer> out = new TreeMap<>();
    for (RegisteredInstance r : store.list(service, false)) {
      if (r.value() instanceof DecodedValue.Accepted a) {
        out.put(a.address(), a.weight());
      }
    }
    return out;
  }

  private static int usage(String message) {
    System.err.println("greeter-client: " + message);
    System.err.println("Try 'greeter-client --help'.");
    return 2;
  }

  public static void main(String[] args) {
    Logging.routeJulToSlf4j();
    CommandLine cli = new CommandLine(new GreeterClientMain());
    cli.setParameterExceptionHandler(
        (ex, a) -> {
          System.err.println("greeter-client: " + ex.getMessage());
          System.err.println("Try 'greeter-client --help'.");
          return 2;
        });
    System.exit(cli.execute(args));
  }
}
