package io.steelyard.balancer.internal;

import static io.steelyard.balancer.internal.TestPickers.childPickers;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.grpc.Status;
import io.steelyard.balancer.spi.TracerDecorator;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import java.time.Duration;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** What one picker build hands the next: each endpoint's load and its traced result. */
class LeastRequestPickerFactoryTest {

  private final FakeTicker ticker = new FakeTicker();
  private final LeastRequestPickerFactory factory =
      new LeastRequestPickerFactory(ticker, new Random(1), TracerDecorator.NONE);

  @Test
  void aRebuildHandsEachEndpointItsLoadAndTracedResultWithoutCopyingThem() {
    SubchannelPicker[] children = childPickers(3);
    LeastRequestPicker first =
        (LeastRequestPicker) factory.newPicker(
            new Object[] {"a", "b"}, Arrays.copyOf(children, 2), new int[] {1, 2},
            WeightedPolicyConfig.DEFAULT);
    EndpointLoad a = factory.load("a");
    PickResult tracedA = first.pick(0, null);

    // "c" goes READY: the next build covers a, b and c, in another order.
    LeastRequestPicker second =
        (LeastRequestPicker) factory.newPicker(
            new Object[] {"c", "a", "b"}, new SubchannelPicker[] {children[2], children[0],
                children[1]}, new int[] {1, 1, 2}, WeightedPolicyConfig.DEFAULT);

    assertThat(factory.load("a")).isSameAs(a);
    assertThat(second.pick(1, null)).isSameAs(tracedA);
    assertThat(tracedA.getStreamTracerFactory()).isSameAs(a.tracerFactory());
    assertThat(second.pick(0, null).getStreamTracerFactory())
        .isSameAs(factory.load("c").tracerFactory());
  }

  @Test
  void anEndpointWhoseChildResultChangedGetsANewTracedResult() {
    SubchannelPicker[] children = childPickers(2); // two connections' results, told apart
    PickResult before =
        ((LeastRequestPicker) factory.newPicker(
            new Object[] {"a"}, new SubchannelPicker[] {children[0]}, new int[] {1},
            WeightedPolicyConfig.DEFAULT)).pick(0, null);

    PickResult after =
        ((LeastRequestPicker) factory.newPicker(
            new Object[] {"a"}, new SubchannelPicker[] {children[1]}, new int[] {1},
            WeightedPolicyConfig.DEFAULT)).pick(0, null);

    assertThat(TestPickers.indexOf(before)).isZero();
    assertThat(TestPickers.indexOf(after)).isEqualTo(1);
    assertThat(after.getStreamTracerFactory()).isSameAs(before.getStreamTracerFactory());
  }

  @Test
  void aChangedErrorPenaltyReachesTheLoadsItKeeps() {
    WeightedPolicyConfig two = WeightedPolicyConfig.builder().errorPenalty(2).build();
    factory.newPicker(new Object[] {"a"}, childPickers(1), new int[] {1}, two);
    EndpointLoad a = factory.load("a");
    long start = ticker.read();
    a.callStarted();
    ticker.advance(Duration.ofNanos(Math.round(Math.log(2) * 1e9))); // success ratio 0.5
    a.callEnded(start, Status.Code.UNAVAILABLE);
    double atTwo = a.errorCost();

    factory.newPicker(
        new Object[] {"a"}, childPickers(1), new int[] {1},
        WeightedPolicyConfig.builder().errorPenalty(4).build());

    assertThat(atTwo).isCloseTo(1.0, within(1e-9));
    assertThat(factory.load("a")).isSameAs(a);
    assertThat(a.errorCost()).isCloseTo(2.0, within(1e-9));
  }
}
