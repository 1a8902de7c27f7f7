package io.steelyard.benchmarks.capacity;

import java.util.List;

/**
 * The fleet's capacities: workers per server, every worker serving one call at a time for the
 * common mean service time. The registered weight of a server is its worker count where the
 * scenario says weights are known.
 */
record CapacityMix(String name, int... workers) {

  /** Four servers of equal capacity. */
  static final CapacityMix EQUAL = new CapacityMix("equal", 4, 4, 4, 4);

  /** Two small and two large servers, 1:3. */
  static final CapacityMix TWO_TIER = new CapacityMix("two-tier", 2, 2, 6, 6);

  /** One of each size, 1:3:4:8: the largest holds half the capacity. */
  static final CapacityMix STEEP = new CapacityMix("steep", 1, 3, 4, 8);

  /** Every mix of the default run; add one here and it runs in every scenario. */
  static final List<CapacityMix> ALL = List.of(EQUAL, TWO_TIER, STEEP);

  int totalWorkers() {
    int total = 0;
    for (int w : workers) {
      total += w;
    }
    return total;
  }

  /** Index of the server with the most workers (the first of them on a tie). */
  int largest() {
    int best = 0;
    for (int i = 1; i < workers.length; i++) {
      if (workers[i] > workers[best]) {
        best = i;
      }
    }
    return best;
  }

  String describe() {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < workers.length; i++) {
      sb.append(i == 0 ? "" : ":").append(workers[i]);
    }
    return name + " (" + sb + ")";
  }
}
