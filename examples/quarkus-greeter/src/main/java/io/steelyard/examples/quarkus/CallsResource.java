package io.steelyard.examples.quarkus;

import io.quarkus.grpc.GrpcClient;
import io.steelyard.examples.proto.GreeterGrpc;
import io.steelyard.examples.proto.HelloRequest;
import jakarta.inject.Inject;
import jakarta.ws.rs.BadRequestException;
import jakarta.ws.rs.DefaultValue;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.QueryParam;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.eclipse.microprofile.rest.client.inject.RestClient;

/**
 * {@code GET /calls?transport=rest|grpc&n=N&parallel=P}: calls {@code greeter} N times from P
 * threads (default 4), each one call after the other, through the REST client ({@code
 * stork://greeter}) or the gRPC client ({@code name-resolver=stork}), and answers which instance
 * answered each call and when it started, so a test or a person can read the split, and how it
 * moves while weights change.
 */
@Path("/calls")
public class CallsResource {

  /** The calls of one request: when each started (epoch ms) and who answered (-1: failed). */
  public record Report(
      String transport, int calls, int failed, Map<String, Integer> counts, List<String> servers,
      long[] startedMillis, int[] answeredBy, List<String> errors) {}

  @Inject @RestClient GreeterRestClient rest;

  @GrpcClient("greeter")
  GreeterGrpc.GreeterBlockingStub grpc;

  @GET
  public Report calls(
      @QueryParam("transport") String transport, @QueryParam("n") int n,
      @QueryParam("parallel") @DefaultValue("4") int parallel) throws Exception {
    if (n < 1 || n > 100_000) {
      throw new BadRequestException("n: " + n + " (expected: 1..100000)");
    }
    if (parallel < 1 || parallel > 32) {
      throw new BadRequestException("parallel: " + parallel + " (expected: 1..32)");
    }
    boolean viaGrpc;
    if ("grpc".equals(transport)) {
      viaGrpc = true;
    } else if ("rest".equals(transport)) {
      viaGrpc = false;
    } else {
      throw new BadRequestException("transport: " + transport + " (expected: rest or grpc)");
    }
    String[] answered = new String[n];
    long[] started = new long[n];
    String[] failures = new String[n];
    HelloRequest request = HelloRequest.newBuilder().setName("quarkus").build();
    ExecutorService pool = Executors.newFixedThreadPool(parallel);
    try {
      List<Future<?>> workers = new ArrayList<>();
      for (int w = 0; w < parallel; w++) {
        int first = w;
        workers.add(pool.submit(() -> {
          for (int i = first; i < n; i += parallel) {
            started[i] = System.currentTimeMillis();
            try {
              answered[i] = viaGrpc
                  ? grpc.withDeadlineAfter(5, TimeUnit.SECONDS).sayHello(request).getServerAddress()
                  : rest.hello();
            } catch (RuntimeException e) {
              failures[i] = e.toString();
            }
          }
        }));
      }
      for (Future<?> f : workers) {
        f.get();
      }
    } finally {
      pool.shutdownNow();
    }
    List<String> servers = new ArrayList<>();
    Map<String, Integer> counts = new LinkedHashMap<>();
    List<String> errors = new ArrayList<>();
    int[] answeredBy = new int[n];
    int failed = 0;
    for (int i = 0; i < n; i++) {
      if (answered[i] == null) {
        answeredBy[i] = -1;
        failed++;
        if (errors.size() < 10) {
          errors.add(failures[i]);
        }
        continue;
      }
      int index = servers.indexOf(answered[i]);
      if (index < 0) {
        index = servers.size();
        servers.add(answered[i]);
      }
      answeredBy[i] = index;
      counts.merge(answered[i], 1, Integer::sum);
    }
    return new Report(transport, n, failed, counts, servers, started, answeredBy, errors);
  }
}
