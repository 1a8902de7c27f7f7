package io.steelyard.benchmarks.clientsubset;

import io.steelyard.balancer.spi.ClientSubset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * The fleet simulation of {@code ClientSubsetTest} over several client subset sizes: n servers
 * of weights 1, 2, 5, 10 in turn, m clients each keeping a client subset and spreading one unit
 * of calls over it by weight (as the policies' pickers do). Prints, per size, the connections per
 * server (min, mean, max, max/mean), the traffic error per server against its weight's share
 * (mean and max |got/expected - 1|, and per weight class), and the members changed per client
 * when one server joins and when one leaves.
 *
 * <pre>{@code
 * ./mvnw -B -q -pl benchmarks -am package -DskipTests
 * java -cp benchmarks/target/benchmarks.jar io.steelyard.benchmarks.clientsubset.ClientSubsetSimulation \
 *     [--servers 1000] [--clients 10000] [--sizes 10,20,50]
 * }</pre>
 */
public final class ClientSubsetSimulation {

  private static final int[] WEIGHTS = {1, 2, 5, 10};

  private ClientSubsetSimulation() {}

  public static void main(String[] args) {
    int servers = intArg(args, "--servers", 1_000);
    int clients = intArg(args, "--clients", 10_000);
    String sizes = stringArg(args, "--sizes", "10,20,50");
    for (String s : sizes.split(",")) {
      simulate(servers, clients, Integer.parseInt(s.trim()));
    }
  }

  static void simulate(int n, int m, int k) {
    long t = System.nanoTime();
    List<String> fleet = new ArrayList<>(n);
    Map<String, Integer> weights = new HashMap<>();
    for (int i = 0; i < n; i++) {
      fleet.add(server(i));
      weights.put(server(i), WEIGHTS[i % WEIGHTS.length]);
    }
    List<Set<String>> subsets = subsets(fleet, m, k);
    long chooseNanos = System.nanoTime() - t;
    Map<String, Integer> connections = new HashMap<>();
    Map<String, Double> traffic = new HashMap<>();
    for (Set<String> s : subsets) {
      double total = s.stream().mapToInt(weights::get).sum();
      for (String server : s) {
        connections.merge(server, 1, Integer::sum);
        traffic.merge(server, weights.get(server) / total, Double::sum);
      }
    }
    double mean = (double) m * k / n;
    int max = 0;
    int min = Integer.MAX_VALUE;
    for (String server : fleet) {
      int c = connections.getOrDefault(server, 0);
      max = Math.max(max, c);
      min = Math.min(min, c);
    }
    double weightSum = weights.values().stream().mapToInt(Integer::intValue).sum();
    double worst = 0;
    double sumAbs = 0;
    double[] got = new double[WEIGHTS.length];
    double[] expected = new double[WEIGHTS.length];
    for (int i = 0; i < n; i++) {
      double e = m * weights.get(server(i)) / weightSum;
      double g = traffic.getOrDefault(server(i), 0.0);
      worst = Math.max(worst, Math.abs(g / e - 1));
      sumAbs += Math.abs(g / e - 1);
      got[i % WEIGHTS.length] += g;
      expected[i % WEIGHTS.length] += e;
    }
    StringBuilder classes = new StringBuilder();
    for (int w = 0; w < WEIGHTS.length; w++) {
      classes.append(String.format(Locale.ROOT, " w%d %+.1f%%", WEIGHTS[w], 100 * (got[w] / expected[w] - 1)));
    }
    List<String> grown = new ArrayList<>(fleet);
    grown.add(server(n));
    List<String> shrunk = new ArrayList<>(fleet);
    shrunk.remove(server(n / 2));
    double joined = churn(subsets, subsets(grown, m, k));
    double left = churn(subsets, subsets(shrunk, m, k));
    System.out.printf(Locale.ROOT,
        "n %d, m %d, subset %d: connections/server min %d mean %.0f max %d (max/mean %.3f, min/mean %.3f);"
            + " traffic error mean %.1f%% max %.1f%%, by weight%s; churn per client: join %.4f, leave %.4f"
            + " (subset/n %.4f); %.0f ns per choice%n",
        n, m, k, min, mean, max, max / mean, min / mean, 100 * sumAbs / n, 100 * worst, classes,
        joined, left, (double) k / n, (double) chooseNanos / m);
  }

  private static List<Set<String>> subsets(List<String> fleet, int m, int k) {
    List<Set<String>> out = new ArrayList<>(m);
    for (int c = 0; c < m; c++) {
      out.add(ClientSubset.of("client-" + c + ".pod.cluster.local", k).choose(fleet, Function.identity()));
    }
    return out;
  }

  private static double churn(List<Set<String>> before, List<Set<String>> after) {
    long changed = 0;
    for (int c = 0; c < before.size(); c++) {
      Set<String> gone = new HashSet<>(before.get(c));
      gone.removeAll(after.get(c));
      changed += gone.size();
    }
    return (double) changed / before.size();
  }

  private static String server(int i) {
    return "10." + (i >> 8 & 255) + "." + (i & 255) + ".7:50051";
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
