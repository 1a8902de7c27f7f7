package io.steelyard.testkit.grpc;

import io.grpc.Grpc;
import io.grpc.InsecureServerCredentials;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.protobuf.services.HealthStatusManager;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Real gRPC servers answering {@code grpc.health.v1} (always SERVING), each counting the calls it
 * serves: the RPC for tests that read which policy a channel runs, or whether it reaches a server
 * at all, from where its calls land. No code generation needed.
 *
 * <pre>{@code
 * try (CountingHealthServers servers = new CountingHealthServers()) {
 *   int a = servers.start();   // a free port, all interfaces
 *   int b = servers.start();
 *   // ... register 127.0.0.1:a with weight 1 and 127.0.0.1:b with weight 3 ...
 *   int[] landed = servers.callAndCount(stub, 400); // {100, 300} under a 1:3 round robin
 * }
 * }</pre>
 *
 * <p>Needs {@code grpc-services} and a server transport (grpc-netty) on the test classpath; testkit
 * declares {@code grpc-services} optional, so only the modules that use this class carry it.
 *
 * <p>Threading: {@link #start} and {@link #close} from the test's thread; counts may be read from
 * any thread (an Awaitility condition, say).
 */
public final class CountingHealthServers implements AutoCloseable {

  private final List<Server> servers = new CopyOnWriteArrayList<>();
  private final List<AtomicInteger> served = new CopyOnWriteArrayList<>();

  /** Starts one more server on a free port and returns the port. Servers count from 0. */
  public int start() throws IOException {
    AtomicInteger count = new AtomicInteger();
    ServerInterceptor counting =
        new ServerInterceptor() {
          @Override
          public <Q, R> ServerCall.Listener<Q> interceptCall(
              ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
            count.incrementAndGet();
            return next.startCall(call, headers);
          }
        };
    Server s =
        Grpc.newServerBuilderForPort(0, InsecureServerCredentials.create())
            .addService(
                ServerInterceptors.intercept(new HealthStatusManager().getHealthService(), counting))
            .build()
            .start();
    servers.add(s);
    served.add(count);
    return ((InetSocketAddress) s.getListenSockets().get(0)).getPort();
  }

  /** The calls server {@code index} (in start order) has served so far. */
  public int served(int index) {
    return served.get(index).get();
  }

  /**
   * Makes {@code calls} health checks through {@code stub}, one after the other, each with a 5 s
   * deadline, and returns how many of them each server served, in start order.
   */
  public int[] callAndCount(HealthGrpc.HealthBlockingStub stub, int calls) {
    int[] before = counts();
    for (int i = 0; i < calls; i++) {
      stub.withDeadlineAfter(5, TimeUnit.SECONDS).check(HealthCheckRequest.getDefaultInstance());
    }
    int[] after = counts();
    for (int s = 0; s < before.length; s++) {
      after[s] -= before[s];
    }
    return Arrays.copyOf(after, before.length);
  }

  private int[] counts() {
    return served.stream().mapToInt(AtomicInteger::get).toArray();
  }

  /**
   * Stops every server now (calls in flight fail), then waits up to 5 s for each to terminate; an
   * interrupt ends the wait, with the thread's interrupt flag set again.
   */
  @Override
  public void close() {
    for (Server s : servers) {
      s.shutdownNow();
    }
    try {
      for (Server s : servers) {
        s.awaitTermination(5, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
