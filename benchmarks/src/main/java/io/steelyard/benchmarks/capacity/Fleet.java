package io.steelyard.benchmarks.capacity;

import io.grpc.EquivalentAddressGroup;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.services.MetricRecorder;
import io.grpc.xds.orca.OrcaMetricReportingServerInterceptor;
import io.steelyard.registry.EndpointWeights;
import io.steelyard.testkit.grpc.CapacityBackend;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The servers of one run: a {@link CapacityBackend} per server of the mix behind a real Netty
 * server on loopback, each reporting ORCA on every reply (grpc's {@link
 * OrcaMetricReportingServerInterceptor} over a {@link MetricRecorder}) as a real server would:
 * utilization = the fraction of its workers busy, averaged over the last 500 ms; qps and eps =
 * calls received and calls failed over the last second.
 */
final class Fleet implements AutoCloseable {

  private static final int SAMPLE_MILLIS = 50;
  private static final int UTILIZATION_SAMPLES = 10; // 500 ms
  private static final int RATE_SAMPLES = 20; // 1 s

  final List<CapacityBackend> backends = new ArrayList<>();
  private final List<Server> servers = new ArrayList<>();
  private final List<MetricRecorder> recorders = new ArrayList<>();
  private final List<EquivalentAddressGroup> endpoints = new ArrayList<>();
  private final ScheduledFuture<?> sampling;

  // Sampling state, touched only by the sampling task.
  private final double[][] busy;
  private final long[][] arrivals;
  private final long[][] failures;
  private int sample;

  Fleet(
      CapacityMix mix,
      Scenario scenario,
      Duration serviceTime,
      ScheduledExecutorService replies,
      ScheduledExecutorService sampler,
      long seed)
      throws IOException {
    int n = mix.workers().length;
    busy = new double[n][UTILIZATION_SAMPLES];
    arrivals = new long[n][RATE_SAMPLES];
    failures = new long[n][RATE_SAMPLES];
    for (int i = 0; i < n; i++) {
      CapacityBackend backend =
          new CapacityBackend("s" + i, mix.workers()[i], serviceTime, replies, new Random(seed + i));
      MetricRecorder recorder = MetricRecorder.newInstance();
      Server server =
          NettyServerBuilder.forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
              .directExecutor()
              .addService(
                  ServerInterceptors.intercept(
                      backend.service(), OrcaMetricReportingServerInterceptor.create(recorder)))
              .build()
              .start();
      backends.add(backend);
      recorders.add(recorder);
      servers.add(server);
      endpoints.add(
          EndpointWeights.withWeight(
              new EquivalentAddressGroup(
                  new InetSocketAddress(InetAddress.getLoopbackAddress(), server.getPort())),
              scenario.weight(mix, i)));
    }
    sampling =
        sampler.scheduleAtFixedRate(this::sample, 0, SAMPLE_MILLIS, TimeUnit.MILLISECONDS);
  }

  /** One endpoint per server, with the scenario's registered weights. */
  List<EquivalentAddressGroup> endpoints() {
    return endpoints;
  }

  /** Calls each server has received so far. */
  long[] arrivals() {
    long[] counts = new long[backends.size()];
    for (int i = 0; i < counts.length; i++) {
      counts[i] = backends.get(i).arrivals();
    }
    return counts;
  }

  private void sample() {
    int u = sample % UTILIZATION_SAMPLES;
    int r = sample % RATE_SAMPLES;
    for (int i = 0; i < backends.size(); i++) {
      CapacityBackend backend = backends.get(i);
      busy[i][u] = backend.busyWorkers() / (double) backend.workers();
      long arrived = backend.arrivals();
      long failed = backend.injectedFailures();
      long arrivedBefore = arrivals[i][r];
      long failedBefore = failures[i][r];
      arrivals[i][r] = arrived;
      failures[i][r] = failed;
      int window = Math.min(sample + 1, RATE_SAMPLES);
      double seconds = window * SAMPLE_MILLIS / 1000.0;
      double utilization = 0;
      for (double b : busy[i]) {
        utilization += b;
      }
      utilization /= Math.min(sample + 1, UTILIZATION_SAMPLES);
      MetricRecorder recorder = recorders.get(i);
      recorder.setApplicationUtilizationMetric(utilization);
      recorder.setCpuUtilizationMetric(utilization);
      recorder.setQpsMetric((arrived - (sample < RATE_SAMPLES ? 0 : arrivedBefore)) / seconds);
      recorder.setEpsMetric((failed - (sample < RATE_SAMPLES ? 0 : failedBefore)) / seconds);
    }
    sample++;
  }

  @Override
  public void close() throws InterruptedException {
    sampling.cancel(false);
    for (Server server : servers) {
      server.shutdownNow();
    }
    for (Server server : servers) {
      server.awaitTermination(5, TimeUnit.SECONDS);
    }
  }
}
