package io.steelyard.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.common.base.Ticker;
import io.grpc.LoadBalancer.FixedResultPicker;
import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.steelyard.balancer.spi.LoadAwarePicker;
import io.steelyard.balancer.spi.LoadAwarePickerFactory;
import io.steelyard.balancer.spi.TracerDecorator;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import java.lang.reflect.Constructor;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@link NaivePickers.DrawsOnly} is the floor of {@code weighted_least_request}'s pick only if it
 * picks what that policy picks: with nothing outstanding and the same random numbers, the same
 * endpoint every time.
 */
class DrawsOnlyTest {

  @ParameterizedTest(name = "{0} weights, n = {1}")
  @CsvSource({
    "uniform, 4", "uniform, 10", "uniform, 10000",
    "skewed, 4", "skewed, 10", "skewed, 1000", "skewed, 10000"
  })
  void picksWhatWeightedLeastRequestPicksWithNothingOutstanding(String distribution, int n)
      throws ReflectiveOperationException {
    int[] weights = Weights.generate(distribution, n, 42);
    Object[] keys = new Object[n];
    SubchannelPicker[] children = new SubchannelPicker[n];
    for (int i = 0; i < n; i++) {
      keys[i] = "endpoint-" + i;
      children[i] = new FixedResultPicker(PickResult.withNoResult());
    }
    PickResult[] results = new PickResult[n];
    Arrays.fill(results, PickResult.withNoResult());
    long seed = 7L * n + distribution.length();
    LoadAwarePicker policy =
        (LoadAwarePicker)
            leastRequestPickers(new Random(seed))
                .newPicker(keys, children, weights, WeightedPolicyConfig.DEFAULT);
    NaivePickers.DrawsOnly floor = new NaivePickers.DrawsOnly(results, weights);
    Random sameNumbers = new Random(seed);

    int[] policyPicks = new int[20_000];
    int[] floorPicks = new int[policyPicks.length];
    for (int k = 0; k < policyPicks.length; k++) {
      policyPicks[k] = policy.choose();
      floorPicks[k] = floor.choose(sameNumbers);
    }

    assertThat(floorPicks).containsExactly(policyPicks);
  }

  /** The policy's picker factory with a seeded random: its test constructor, package-private. */
  private static LoadAwarePickerFactory leastRequestPickers(Random random)
      throws ReflectiveOperationException {
    Constructor<?> constructor =
        Class.forName("io.steelyard.balancer.internal.LeastRequestPickerFactory")
            .getDeclaredConstructor(Ticker.class, Random.class, TracerDecorator.class);
    constructor.setAccessible(true);
    return (LoadAwarePickerFactory)
        constructor.newInstance(Ticker.systemTicker(), random, TracerDecorator.NONE);
  }
}
