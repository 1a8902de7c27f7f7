package io.steelyard.benchmarks;

import java.util.Random;

/** The weight vectors of the benchmarks, from a fixed seed so every run sees the same ones. */
final class Weights {

  private Weights() {}

  /**
   * {@code uniform}: integers uniform in 1..10. {@code skewed}: log-uniform in 1..1,000,000
   * (as many endpoints near 1 as near 1,000, as near 1,000,000).
   */
  static int[] generate(String distribution, int n, long seed) {
    Random random = new Random(seed);
    int[] weights = new int[n];
    for (int i = 0; i < n; i++) {
      switch (distribution) {
        case "uniform":
          weights[i] = 1 + random.nextInt(10);
          break;
        case "skewed":
          weights[i] = (int) Math.max(1, Math.min(1_000_000, Math.round(Math.pow(10, 6 * random.nextDouble()))));
          break;
        default:
          throw new IllegalArgumentException("distribution: " + distribution + " (expected: uniform, skewed)");
      }
    }
    return weights;
  }
}
