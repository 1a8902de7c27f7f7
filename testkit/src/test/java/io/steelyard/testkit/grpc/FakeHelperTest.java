package io.steelyard.testkit.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.ConnectivityState;
import io.grpc.LoadBalancer.FixedResultPicker;
import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.grpc.Status;
import org.junit.jupiter.api.Test;

class FakeHelperTest {

  private final FakeHelper helper = new FakeHelper();

  private void publish(ConnectivityState state, SubchannelPicker picker) {
    helper.syncContext().execute(() -> helper.updateBalancingState(state, picker));
  }

  @Test
  void recordsEveryPublishedStateAndPickerInOrder() {
    SubchannelPicker connecting = new FixedResultPicker(PickResult.withNoResult());
    SubchannelPicker failing = new FixedResultPicker(PickResult.withError(Status.UNAVAILABLE));

    publish(ConnectivityState.CONNECTING, connecting);
    publish(ConnectivityState.TRANSIENT_FAILURE, failing);

    assertThat(helper.states()).containsExactly(ConnectivityState.CONNECTING, ConnectivityState.TRANSIENT_FAILURE);
    assertThat(helper.pickers()).containsExactly(connecting, failing);
    assertThat(helper.lastPicker()).isSameAs(failing);
  }

  @Test
  void forgetHistoryKeepsOnlyTheLastStateAndPicker() {
    SubchannelPicker last = new FixedResultPicker(PickResult.withNoResult());
    publish(ConnectivityState.CONNECTING, new FixedResultPicker(PickResult.withNoResult()));
    publish(ConnectivityState.IDLE, last);

    helper.forgetHistory();

    assertThat(helper.states()).containsExactly(ConnectivityState.IDLE);
    assertThat(helper.pickers()).containsExactly(last);
  }

  @Test
  void balancerWorkOutsideTheSynchronizationContextFailsTheTest() {
    assertThatThrownBy(
            () ->
                helper.updateBalancingState(
                    ConnectivityState.READY, new FixedResultPicker(PickResult.withNoResult())))
        .isInstanceOf(IllegalStateException.class);
  }

  @Test
  void anExceptionInTheSynchronizationContextBecomesAnAssertionError() {
    assertThatThrownBy(() -> helper.syncContext().execute(() -> {
      throw new IllegalStateException("boom");
    })).isInstanceOf(AssertionError.class).hasRootCauseMessage("boom");
  }
}
