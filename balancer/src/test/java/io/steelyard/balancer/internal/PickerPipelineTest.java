package io.steelyard.balancer.internal;

import static io.steelyard.balancer.internal.TestPickers.childPickers;
import static io.steelyard.balancer.internal.TestPickers.indexOf;
import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.PickSubchannelArgs;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.steelyard.balancer.spi.EndpointSelection;
import io.steelyard.balancer.spi.LoadAwarePicker;
import io.steelyard.balancer.spi.LoadAwarePickerFactory;
import io.steelyard.balancer.spi.PickerFactory;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import io.steelyard.balancer.spi.ZoneRoutingConfig;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The order of the steps split, selection, zone, pick, and how the pipeline calls a policy. */
class PickerPipelineTest {

  private static final Map<String, String> V1 = Map.of("version", "v1");
  private static final Map<String, String> V2 = Map.of("version", "v2");

  /**
   * READY: e0 (v1, zone a), e1 (v1, b), e2 (v2, a), e3 (v2, b); e4 (v1, a) has a child but is
   * not READY. Weight 1 each.
   */
  private static final Object[] KEYS = {"e0", "e1", "e2", "e3"};

  private final SubchannelPicker[] children = childPickers(KEYS.length);

  /** Records each call; builds weighted random pickers. */
  private static class RecordingFactory implements PickerFactory {
    final List<String> calls = new ArrayList<>();
    final PickerFactory delegate = WeightedRandomPicker.newFactory(new Random(5));

    @Override
    public SubchannelPicker newPicker(SubchannelPicker[] childPickers, int[] weights) {
      calls.add("newPicker " + childPickers.length);
      return delegate.newPicker(childPickers, weights);
    }

    @Override
    public SubchannelPicker newPicker(
        Object[] keys, SubchannelPicker[] childPickers, int[] weights, WeightedPolicyConfig config) {
      calls.add("newPicker " + Arrays.toString(keys));
      return delegate.newPicker(childPickers, weights);
    }

    @Override
    public SubchannelPicker[] newPickers(
        Object[][] keys, SubchannelPicker[][] childPickers, int[][] weights,
        WeightedPolicyConfig config) {
      calls.add("newPickers " + Arrays.deepToString(keys));
      SubchannelPicker[] out = new SubchannelPicker[keys.length];
      for (int g = 0; g < out.length; g++) {
        out[g] = delegate.newPicker(childPickers[g], weights[g]);
      }
      return out;
    }
  }

  private static PickerPipeline pipeline(PickerFactory factory) {
    PickerPipeline pipeline = new PickerPipeline("weighted_random", factory, new Random(9));
    Map<Object, Integer> declared = new HashMap<>();
    for (Object key : List.of("e0", "e1", "e2", "e3", "e4")) {
      declared.put(key, 1);
    }
    pipeline.resolved(
        declared,
        Map.of("e0", "a", "e1", "b", "e2", "a", "e3", "b", "e4", "a"),
        Map.of("e0", V1, "e1", V1, "e2", V2, "e3", V2, "e4", V1));
    return pipeline;
  }

  private SubchannelPicker picker(PickerPipeline pipeline, WeightedPolicyConfig config) {
    return pipeline.picker(KEYS, children, new int[] {1, 1, 1, 1}, 1, config);
  }

  @Test
  void withoutSelectionOrCallerZoneThePolicyPicksOverEveryEndpointInOneCall() {
    RecordingFactory factory = new RecordingFactory();

    picker(pipeline(factory), WeightedPolicyConfig.DEFAULT);

    assertThat(factory.calls).containsExactly("newPicker [e0, e1, e2, e3]");
  }

  @Test
  void everyGroupOfEverySelectionAndZoneIsBuiltInOneCallInStepOrder() {
    RecordingFactory factory = new RecordingFactory();
    WeightedPolicyConfig config = WeightedPolicyConfig.builder()
        .endpointSelection(EndpointSelection.split(List.of(V1, V2), new int[] {5_000, 5_000}))
        .zoneRouting(ZoneRoutingConfig.builder().zone("a").minLocalEndpoints(1).build())
        .build();

    SubchannelPicker picker = picker(pipeline(factory), config);

    // Split first (v1, v2); then the zone step within each selection over its own endpoints: v1
    // has lost e4 in zone a (READY 1 of 2, registered 2 of 3: keeps 3/4, the rest to e1), v2's
    // zone a carries its share (e2 alone); then one policy call over every group, in that order.
    assertThat(factory.calls).containsExactly("newPickers [[e0], [e1], [e2]]");
    assertThat(picker).isInstanceOf(SplitPicker.class);
    SubchannelPicker[] selections = ((SplitPicker) picker).selectionPickers();
    assertThat(((ZonePicker) selections[0]).localShare()).isEqualTo(0.75);
    assertThat(selections[1]).isNotInstanceOf(ZonePicker.class);
  }

  /** A policy of its own whose pickers offer their load: test endpoint 0 is always full. */
  private static final class FullFirstFactory implements LoadAwarePickerFactory {
    int loadAwareCalls;

    @Override
    public SubchannelPicker newPicker(SubchannelPicker[] childPickers, int[] weights) {
      return new FullFirst(childPickers);
    }

    @Override
    public SubchannelPicker[] newLoadAwarePickers(
        Object[][] keys, SubchannelPicker[][] childPickers, int[][] weights,
        WeightedPolicyConfig config, LoadAwarePicker[] views) {
      loadAwareCalls++;
      FullFirst[] pickers = new FullFirst[keys.length];
      for (int g = 0; g < pickers.length; g++) {
        pickers[g] = new FullFirst(childPickers[g]);
      }
      System.arraycopy(pickers, 0, views, 0, pickers.length);
      return pickers;
    }

    @Override
    public boolean reportUtilization(EquivalentAddressGroup eag, double utilization) {
      return false;
    }
  }

  /** Always chooses its first endpoint; test endpoint 0 is full, every other one idle. */
  private static final class FullFirst extends SubchannelPicker implements LoadAwarePicker {
    private final SubchannelPicker[] children;

    FullFirst(SubchannelPicker[] children) {
      this.children = children.clone();
    }

    @Override
    public PickResult pickSubchannel(PickSubchannelArgs args) {
      return pick(choose(), args);
    }

    @Override
    public int choose() {
      return 0;
    }

    @Override
    public double loadScore(int endpoint) {
      return indexOf(children[endpoint].pickSubchannel(null)) == 0 ? 10 : 0.1;
    }

    @Override
    public double rankScore(int endpoint) {
      return loadScore(endpoint);
    }

    @Override
    public PickResult pick(int endpoint, PickSubchannelArgs args) {
      return children[endpoint].pickSubchannel(args);
    }
  }

  @Test
  void aPolicyOfItsOwnThatOffersLoadAwarePickersGetsTheLiveLoadSpill() {
    FullFirstFactory factory = new FullFirstFactory();
    PickerPipeline pipeline = new PickerPipeline("full_first", factory, new Random(9));
    pipeline.resolved(Map.of("a0", 1, "b0", 1), Map.of("a0", "a", "b0", "b"), Map.of());
    WeightedPolicyConfig config = WeightedPolicyConfig.builder()
        .zoneRouting(ZoneRoutingConfig.builder().zone("a").build())
        .build();

    SubchannelPicker picker = pipeline.picker(
        new Object[] {"a0", "b0"}, childPickers(2), new int[] {1, 1}, 1, config);

    // Zone a carries its share, so without live load every call would stay there; its only
    // endpoint is full and zone b's is idle, so every call spills.
    assertThat(factory.loadAwareCalls).isEqualTo(1);
    for (int i = 0; i < 100; i++) {
      assertThat(indexOf(picker.pickSubchannel(null))).isEqualTo(1);
    }
  }
}
