package io.steelyard.balancer.spi;

import static java.util.Objects.requireNonNull;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.PriorityQueue;
import java.util.Set;
import java.util.function.Function;
import javax.annotation.concurrent.Immutable;

/**
 * A client subset: deterministic subsetting by rendezvous (highest-random-weight) hashing. A
 * client connects to the {@code size} endpoints whose hash with the client's identity is
 * highest. The choice needs nothing but the client's identity and the endpoint names, so it is
 * stable across restarts of the client and across clients' views arriving in any order.
 *
 * <pre>{@code
 * ClientSubset clientSubset = ClientSubset.of("billing-7f9c", 20);
 * Set<String> chosen = clientSubset.choose(addresses, a -> a);   // at most 20 of them
 * }</pre>
 *
 * <p>What it guarantees, shown by {@code ClientSubsetTest} (1,000 endpoints of mixed weights,
 * 10,000 clients, {@code subsetSize} 20) and measured by {@code ClientSubsetSimulation} in
 * benchmarks:
 *
 * <ul>
 *   <li><b>Churn</b>: adding or removing one endpoint changes at most one member of any client's
 *       client subset, and only for about {@code size / n} of the clients: the ranking of the others
 *       does not move.
 *   <li><b>Connections</b>: each endpoint is in about {@code clients * size / n} client subsets, a
 *       binomial count (clients choose independently): the spread max/mean is about {@code 1 +
 *       3.2 / sqrt(clients * size / n)}, 1.2 once each endpoint averages ~260 clients.
 *   <li><b>Traffic follows weight</b>: membership ignores weights on purpose and the policy's
 *       picker spreads each client's calls over its client subset by weight, so an endpoint's expected
 *       share is its weight's share, up to the same binomial noise. Hashing weights into the
 *       ranking (weighted rendezvous, score {@code w / -ln u}) would instead put connections in
 *       proportion to weight (an endpoint of weight 10 holding ten times the connections of one
 *       of weight 1), and every weight change would move client subsets; a drained endpoint (weight
 *       0) likewise stays in the client subsets that hold it and takes no calls.
 * </ul>
 *
 * <p>Immutable and thread-safe. Cost: one 64-bit hash per endpoint and a heap of {@code size},
 * O(n log size) per call.
 */
@Immutable
public final class ClientSubset {

  private final String clientIdentity;
  private final long clientHash;
  private final int size;

  private ClientSubset(String clientIdentity, int size) {
    this.clientIdentity = requireNonNull(clientIdentity, "clientIdentity");
    if (size < 1) {
      throw new IllegalArgumentException("client subset size: " + size + " (expected: >= 1)");
    }
    this.size = size;
    this.clientHash = hash(clientIdentity);
  }

  /** The client subset of the client named {@code clientIdentity}, keeping {@code size} endpoints. */
  public static ClientSubset of(String clientIdentity, int size) {
    return new ClientSubset(clientIdentity, size);
  }

  public int size() {
    return size;
  }

  public String clientIdentity() {
    return clientIdentity;
  }

  /**
   * The endpoints of {@code candidates} this client keeps: all of them if there are at most
   * {@link #size()}, else the {@code size} of highest rank. {@code name} gives each candidate's
   * stable name (its address); candidates of equal name rank equally and both are kept or not.
   */
  public <T> Set<T> choose(Collection<T> candidates, Function<? super T, String> name) {
    if (candidates.size() <= size) {
      return new HashSet<>(candidates);
    }
    // Min-heap of the best `size` seen so far, by (score, then name for a total order).
    PriorityQueue<Ranked<T>> best = new PriorityQueue<>(size + 1);
    for (T candidate : candidates) {
      String n = name.apply(candidate);
      long score = score(n);
      if (best.size() < size) {
        best.add(new Ranked<>(candidate, n, score));
        continue;
      }
      Ranked<T> worst = best.peek();
      int c = Long.compareUnsigned(score, worst.score);
      if (c > 0 || (c == 0 && n.compareTo(worst.name) > 0)) {
        best.poll();
        best.add(new Ranked<>(candidate, n, score));
      }
    }
    Set<T> out = new HashSet<>(size * 2);
    for (Ranked<T> r : best) {
      out.add(r.item);
    }
    return out;
  }

  /** The rank of the endpoint named {@code name} for this client: higher is kept first. */
  long score(String name) {
    return mix(clientHash ^ mix(hash(name) + 0x9E3779B97F4A7C15L));
  }

  /** A list of {@code candidates} in this client's rank order, best first (tests, docs). */
  <T> List<T> ranked(Collection<T> candidates, Function<? super T, String> name) {
    List<Ranked<T>> all = new ArrayList<>(candidates.size());
    for (T c : candidates) {
      String n = name.apply(c);
      all.add(new Ranked<>(c, n, score(n)));
    }
    all.sort((a, b) -> b.compareTo(a));
    List<T> out = new ArrayList<>(all.size());
    for (Ranked<T> r : all) {
      out.add(r.item);
    }
    return out;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ClientSubset that
        && size == that.size
        && clientIdentity.equals(that.clientIdentity);
  }

  @Override
  public int hashCode() {
    return 31 * clientIdentity.hashCode() + size;
  }

  @Override
  public String toString() {
    return "ClientSubset{client=" + clientIdentity + ", size=" + size + "}";
  }

  private record Ranked<T>(T item, String name, long score) implements Comparable<Ranked<T>> {
    @Override
    public int compareTo(Ranked<T> o) {
      int c = Long.compareUnsigned(score, o.score);
      return c != 0 ? c : name.compareTo(o.name);
    }
  }

  /**
   * 64-bit FNV-1a over the UTF-16 code units, then mixed: the same in every JVM and release (not
   * {@code String.hashCode}), so clients of different versions choose alike.
   */
  private static long hash(String s) {
    long h = 0xcbf29ce484222325L;
    for (int i = 0; i < s.length(); i++) {
      h ^= s.charAt(i);
      h *= 0x100000001b3L;
    }
    return mix(h);
  }

  /** MurmurHash3's 64-bit finalizer: every input bit affects every output bit. */
  private static long mix(long z) {
    z ^= z >>> 33;
    z *= 0xff51afd7ed558ccdL;
    z ^= z >>> 33;
    z *= 0xc4ceb9fe1a85ec53L;
    z ^= z >>> 33;
    return z;
  }
}
