package io.steelyard.balancer.internal;

import static io.steelyard.balancer.internal.TestPickers.childPickers;
import static io.steelyard.balancer.internal.TestPickers.indexOf;
import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.grpc.Status;
import io.steelyard.balancer.spi.EndpointSelection;
import io.steelyard.balancer.spi.PickerFactory;
import io.steelyard.balancer.spi.TracerDecorator;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Metadata selection in the pipeline: which READY endpoints a picker covers under {@code subset}
 * and {@code split}, exactly.
 */
class SelectionTest {

  private static final Map<String, String> V1 = Map.of("version", "v1");
  private static final Map<String, String> V2 = Map.of("version", "v2");

  /** Draws 0, 1, 2, ... modulo the bound: a split's shares come out exact over a whole cycle. */
  private static final class CountingRandom extends Random {
    private int next;

    @Override
    public int nextInt(int bound) {
      return next++ % bound;
    }
  }

  private final Random counting = new CountingRandom();
  /** Round robin from slot 0: exact counts inside a selection. */
  private final PickerFactory roundRobin =
      SmoothRoundRobinPicker.newFactory(new StripedPositions(new int[] {0, 0, 0, 0}));

  private final Map<Object, Map<String, String>> metadata = new HashMap<>();

  /** Endpoint {@code i} is key {@code "e" + i} with {@code metas[i]} (null: no metadata). */
  @SafeVarargs
  private Object[] keys(Map<String, String>... metas) {
    Object[] keys = new Object[metas.length];
    for (int i = 0; i < metas.length; i++) {
      keys[i] = "e" + i;
      if (metas[i] != null) {
        metadata.put(keys[i], metas[i]);
      }
    }
    return keys;
  }

  private SubchannelPicker picker(Object[] keys, int[] weights, EndpointSelection config) {
    return picker(roundRobin, counting, keys, childPickers(keys.length), weights,
        WeightedPolicyConfig.builder().endpointSelection(config).build());
  }

  /** The pipeline's picker over the READY endpoints {@code keys}, whose metadata is this test's. */
  private SubchannelPicker picker(
      PickerFactory factory,
      Random random,
      Object[] keys,
      SubchannelPicker[] children,
      int[] weights,
      WeightedPolicyConfig config) {
    PickerPipeline pipeline = new PickerPipeline("weighted_random", factory, random);
    pipeline.resolved(Map.of(), Map.of(), metadata);
    return pipeline.picker(keys, children, weights, 1, config);
  }

  private static int[] counts(SubchannelPicker picker, int endpoints, int picks) {
    int[] counts = new int[endpoints];
    for (int i = 0; i < picks; i++) {
      PickResult result = picker.pickSubchannel(null);
      assertThat(result.getStatus().isOk()).as("pick status %s", result.getStatus()).isTrue();
      counts[indexOf(result)]++;
    }
    return counts;
  }

  private static EndpointSelection select(boolean fallbackToAny, Map<String, String>... selectors) {
    return EndpointSelection.select(List.of(selectors), fallbackToAny);
  }

  private static EndpointSelection split(int v1BasisPoints, int v2BasisPoints) {
    return EndpointSelection.split(List.of(V1, V2), new int[] {v1BasisPoints, v2BasisPoints});
  }

  @Test
  void withoutMetadataSelectionThePickerIsTheFactorysOwn() {
    Object[] keys = keys(V1, V2);
    SubchannelPicker[] children = childPickers(2);
    int[] weights = {1, 3};

    SubchannelPicker picker =
        picker(roundRobin, counting, keys, children, weights, WeightedPolicyConfig.DEFAULT);

    assertThat(picker).isEqualTo(roundRobin.newPicker(children, weights));
  }

  @Test
  void aSelectionPicksOnlyMatchingEndpointsWithTheirWeights() {
    Object[] keys = keys(V1, V2, V2);

    int[] counts = counts(picker(keys, new int[] {5, 1, 3}, select(true, V2)), 3, 400);

    assertThat(counts).containsExactly(0, 100, 300);
  }

  @Test
  void aSelectorMatchesWhenEveryLabelMatchesWhateverElseTheEndpointCarries() {
    Object[] keys = keys(Map.of("version", "v2", "zone", "a"), Map.of("version", "v2"), null);

    int[] counts = counts(picker(keys, new int[] {1, 1, 1}, select(true, V2)), 3, 10);

    assertThat(counts).containsExactly(5, 5, 0);
  }

  @Test
  void aSelectionWithNoReadyMatchTriesTheNextSelector() {
    Object[] keys = keys(V1, V1, Map.of("version", "v0"));

    int[] counts = counts(picker(keys, new int[] {1, 1, 1}, select(false, V2, V1)), 3, 10);

    assertThat(counts).containsExactly(5, 5, 0);
  }

  @Test
  void fallbackAnyPicksEveryReadyEndpointWhenNoSelectorMatches() {
    Object[] keys = keys(V1, null);

    int[] counts = counts(picker(keys, new int[] {1, 3}, select(true, V2)), 2, 8);

    assertThat(counts).containsExactly(2, 6);
  }

  @Test
  void fallbackNoneFailsCallsWithUnavailableNamingTheSelectors() {
    Object[] keys = keys(V1, null);

    PickResult result = picker(keys, new int[] {1, 1}, select(false, V2, Map.of("version", "v3")))
        .pickSubchannel(null);

    assertThat(result.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(result.getStatus().getDescription())
        .isEqualTo("no READY endpoint matches selectors {version=v2}, {version=v3} (subset fallback: none)");
  }

  @Test
  void aSplitSendsExactlyItsPercentagesToEachSelection() {
    Object[] keys = keys(V1, V2, Map.of("version", "v0"));

    int[] counts = counts(picker(keys, new int[] {1, 1, 1}, split(9000, 1000)), 3, 10_000);

    assertThat(counts).containsExactly(9000, 1000, 0);
  }

  @Test
  void weightsApplyInsideEachSelectionOfASplit() {
    Object[] keys = keys(V1, V1, V2, V2);

    int[] counts =
        counts(
            picker(
                WeightedRandomPicker.newFactory(new Random(11)),
                new Random(7),
                keys,
                childPickers(4),
                new int[] {1, 3, 3, 1},
                WeightedPolicyConfig.builder().endpointSelection(split(5000, 5000)).build()),
            4,
            40_000);

    // v1 and v2 each take half; inside each, weight 3 takes three quarters (fixed seeds).
    assertThat(counts[0] + counts[1]).isBetween(19_600, 20_400);
    assertThat(counts[1] / (double) (counts[0] + counts[1])).isBetween(0.73, 0.77);
    assertThat(counts[2] / (double) (counts[2] + counts[3])).isBetween(0.73, 0.77);
  }

  @Test
  void eachSelectionOfASplitFollowsItsOwnRoundRobinSequence() {
    Object[] keys = keys(V1, V1, V2, V2);
    Random alternating = new Random() {
      private int n;

      @Override
      public int nextInt(int bound) {
        return n++ % 2 == 0 ? 0 : bound - 1;
      }
    };
    SubchannelPicker picker = picker(
        SmoothRoundRobinPicker.newFactory(() -> new StripedPositions(new int[] {0, 0, 0, 0})),
        alternating,
        keys,
        childPickers(4),
        new int[] {1, 3, 3, 1},
        WeightedPolicyConfig.builder().endpointSelection(split(5000, 5000)).build());

    // Calls alternate between the selections; each still gets whole periods of its own schedule.
    assertThat(counts(picker, 4, 16)).containsExactly(2, 6, 6, 2);
  }

  @Test
  void aSelectionWithNoReadyEndpointGivesItsShareToTheOthersInProportion() {
    Map<String, String> v3 = Map.of("version", "v3");
    Object[] keys = keys(V1, v3);
    EndpointSelection threeWays = EndpointSelection.split(List.of(V1, V2, v3), new int[] {5000, 3000, 2000});

    int[] counts = counts(picker(keys, new int[] {1, 1}, threeWays), 2, 7000);

    assertThat(counts).containsExactly(5000, 2000);
  }

  @Test
  void whenOnlySelectionsWithoutShareAreReadyTheyTakeEveryCall() {
    Object[] keys = keys(V2, V2);

    int[] counts = counts(picker(keys, new int[] {1, 1}, split(10_000, 0)), 2, 10);

    assertThat(counts).containsExactly(5, 5);
  }

  @Test
  void aSelectionWithZeroPercentTakesNothingWhileAnotherIsReady() {
    Object[] keys = keys(V1, V2);

    int[] counts = counts(picker(keys, new int[] {1, 1}, split(10_000, 0)), 2, 10);

    assertThat(counts).containsExactly(10, 0);
  }

  @Test
  void whenNoSelectionOfASplitIsReadyEveryReadyEndpointTakesCalls() {
    Object[] keys = keys(Map.of("version", "v0"), null);

    int[] counts = counts(picker(keys, new int[] {1, 1}, split(9000, 1000)), 2, 10);

    assertThat(counts).containsExactly(5, 5);
  }

  @Test
  void leastRequestKeepsOneLoadPerEndpointAcrossEverySelectionOfASplit() {
    LeastRequestPickerFactory factory =
        new LeastRequestPickerFactory(new FakeTicker(), new Random(1), TracerDecorator.NONE);
    Object[] keys = keys(V1, V1, V2);
    factory.newPicker(keys, childPickers(3), new int[] {1, 1, 1}, WeightedPolicyConfig.DEFAULT);
    EndpointLoad[] before = {factory.load("e0"), factory.load("e1"), factory.load("e2")};

    picker(
        factory,
        new Random(1),
        keys,
        childPickers(3),
        new int[] {1, 1, 1},
        WeightedPolicyConfig.builder().endpointSelection(split(5000, 5000)).build());

    // Not only the last selection's endpoints: each keeps its counts, and out-of-band reports reach it.
    assertThat(new EndpointLoad[] {factory.load("e0"), factory.load("e1"), factory.load("e2")})
        .containsExactly(before);
    assertThat(Arrays.stream(before).allMatch(load -> load != null)).isTrue();
  }
}
