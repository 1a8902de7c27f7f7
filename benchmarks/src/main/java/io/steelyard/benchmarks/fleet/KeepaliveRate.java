package io.steelyard.benchmarks.fleet;

import io.etcd.jetcd.Client;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.support.CloseableClient;
import io.grpc.stub.StreamObserver;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.EtcdGrpcProxy;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Lease keepalive requests per second reaching etcd for N leases of TTL T, each kept alive the
 * way the agent keeps a registration's lease (jetcd {@code Lease.keepAlive}, one lease per
 * registration today), directly and through etcd's gRPC proxy. Counted by etcd itself: the
 * increase of {@code grpc_server_msg_received_total{grpc_method="LeaseKeepAlive"}} on the member
 * over a window, after two TTLs of warm-up.
 *
 * <pre>{@code
 * ./mvnw -B -q -pl benchmarks -am package -DskipTests
 * java -cp benchmarks/target/benchmarks.jar io.steelyard.benchmarks.fleet.KeepaliveRate \
 *     [--leases 1000] [--ttls 5,15] [--window 30]
 * }</pre>
 */
public final class KeepaliveRate {

  private static final HttpClient HTTP = HttpClient.newHttpClient();

  private KeepaliveRate() {}

  public static void main(String[] args) throws Exception {
    int leases = intArg(args, "--leases", 1_000);
    int window = intArg(args, "--window", 30);
    String ttls = stringArg(args, "--ttls", "5,15");
    try (EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build()) {
      etcd.start();
      URI member = etcd.clientEndpoints().get(0);
      try (EtcdGrpcProxy proxy = EtcdGrpcProxy.start(etcd)) {
        for (String t : ttls.split(",")) {
          int ttl = Integer.parseInt(t.trim());
          measure("direct", etcd.endpoints(), member, leases, ttl, window);
          measure("through one gRPC proxy", proxy.endpoint(), member, leases, ttl, window);
        }
      }
    }
  }

  private static void measure(String how, String endpoint, URI member, int leases, int ttl, int window)
      throws Exception {
    try (Client client = EtcdConnection.of(endpoint).connect()) {
      List<CompletableFuture<?>> grants = new ArrayList<>();
      for (int i = 0; i < leases; i++) {
        grants.add(client.getLeaseClient().grant(ttl));
      }
      List<CloseableClient> keepers = new ArrayList<>();
      for (CompletableFuture<?> g : grants) {
        long id = ((io.etcd.jetcd.lease.LeaseGrantResponse) g.get(30, TimeUnit.SECONDS)).getID();
        keepers.add(client.getLeaseClient().keepAlive(id, new StreamObserver<LeaseKeepAliveResponse>() {
          @Override
          public void onNext(LeaseKeepAliveResponse r) {}

          @Override
          public void onError(Throwable t) {
            System.err.println("keepalive failed: " + t);
          }

          @Override
          public void onCompleted() {}
        }));
      }
      TimeUnit.SECONDS.sleep(2L * ttl); // a harness, not a test: settle into the steady rhythm
      double before = keepalivesReceived(member);
      long t0 = System.nanoTime();
      TimeUnit.SECONDS.sleep(window);
      double after = keepalivesReceived(member);
      double seconds = (System.nanoTime() - t0) / 1e9;
      double rate = (after - before) / seconds;
      System.out.printf(Locale.ROOT,
          "%d leases, TTL %d s, %s: %.1f keepalive requests/s at etcd (%.2f per lease per TTL)%n",
          leases, ttl, how, rate, rate * ttl / leases);
      keepers.forEach(CloseableClient::close);
      for (CompletableFuture<?> g : grants) {
        client.getLeaseClient().revoke(((io.etcd.jetcd.lease.LeaseGrantResponse) g.get()).getID());
      }
    }
  }

  /** etcd's count of LeaseKeepAlive stream messages received, from the member's /metrics. */
  private static double keepalivesReceived(URI member) throws Exception {
    HttpResponse<String> r = HTTP.send(
        HttpRequest.newBuilder(member.resolve("/metrics")).GET().build(), HttpResponse.BodyHandlers.ofString());
    double sum = 0;
    for (String line : r.body().split("\n")) {
      if (line.startsWith("grpc_server_msg_received_total{") && line.contains("grpc_method=\"LeaseKeepAlive\"")) {
        sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
      }
    }
    return sum;
  }

  private static int intArg(String[] args, String name, int fallback) {
    String v = stringArg(args, name, null);
    return v == null ? fallback : Integer.parseInt(v);
  }

  private static String stringArg(String[] args, String name, String fallback) {
    for (int i = 0; i + 1 < args.length; i++) {
      if (args[i].equals(name)) {
        return args[i + 1];
      }
    }
    return fallback;
  }
}
