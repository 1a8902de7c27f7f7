package io.steelyard.balancer.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.grpc.ClientStreamTracer;
import io.grpc.Metadata;
import io.grpc.Status;
import io.steelyard.balancer.spi.TracerDecorator;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The per-endpoint load under fake time: counts, the peak EWMA, the success ratio, penalties. */
class EndpointLoadTest {

  private final FakeTicker ticker = new FakeTicker();

  private EndpointLoad load(WeightedPolicyConfig config) {
    return new EndpointLoad(ticker, config, TracerDecorator.NONE);
  }

  private EndpointLoad load() {
    return load(WeightedPolicyConfig.DEFAULT);
  }

  /** Runs one call through the load: started now, ended {@code duration} later with {@code code}. */
  private void call(EndpointLoad load, Duration duration, Status.Code code) {
    long start = ticker.read();
    load.callStarted();
    ticker.advance(duration);
    load.callEnded(start, code);
  }

  @Test
  void freshLoadIsIdleHealthyAndWithoutLatency() {
    EndpointLoad load = load();

    assertThat(load.outstanding()).isZero();
    assertThat(load.latencyNanos()).isZero();
    assertThat(load.penalty()).isEqualTo(1.0);
    assertThat(load.successRatio()).isEqualTo(1.0);
  }

  @Test
  void tracerCountsACallFromStreamCreatedToStreamClosed() {
    EndpointLoad load = load();
    ClientStreamTracer tracer =
        load.tracerFactory()
            .newClientStreamTracer(
                ClientStreamTracer.StreamInfo.newBuilder().build(), new Metadata());

    tracer.streamCreated(io.grpc.Attributes.EMPTY, new Metadata());
    assertThat(load.outstanding()).isEqualTo(1);
    ticker.advance(Duration.ofMillis(7));
    tracer.streamClosed(Status.OK);

    assertThat(load.outstanding()).isZero();
    assertThat(load.latencyNanos()).isEqualTo(7e6);
  }

  @Test
  void streamClosedWithoutStreamCreatedCountsNothing() {
    EndpointLoad load = load();
    ClientStreamTracer tracer =
        load.tracerFactory()
            .newClientStreamTracer(
                ClientStreamTracer.StreamInfo.newBuilder().build(), new Metadata());

    tracer.streamClosed(Status.UNAVAILABLE);

    assertThat(load.outstanding()).isZero();
    assertThat(load.successRatio()).isEqualTo(1.0);
  }

  @Test
  void latencyRisesToASlowerSampleAtOnce() {
    EndpointLoad load = load();
    call(load, Duration.ofMillis(10), Status.Code.OK);

    call(load, Duration.ofMillis(80), Status.Code.OK);

    assertThat(load.latencyNanos()).isEqualTo(80e6);
  }

  @Test
  void latencyDecaysTowardFasterSamplesWithTheConfiguredTimeConstant() {
    EndpointLoad load = load(); // decay 1s
    call(load, Duration.ofMillis(100), Status.Code.OK);

    // A 10 ms call ending 1 s after the previous sample: weight 1 - e^-1 on the new sample.
    ticker.advance(Duration.ofMillis(990));
    call(load, Duration.ofMillis(10), Status.Code.OK);

    double w = 1 - Math.exp(-1);
    assertThat(load.latencyNanos()).isCloseTo(100e6 + w * (10e6 - 100e6), within(1.0));
  }

  @Test
  void samplesCloseTogetherMoveTheLatencyLittle() {
    EndpointLoad load = load();
    call(load, Duration.ofMillis(100), Status.Code.OK);

    call(load, Duration.ofMillis(1), Status.Code.OK); // 1 ms after the previous sample

    assertThat(load.latencyNanos()).isCloseTo(100e6 - 99e6 * (1 - Math.exp(-0.001)), within(1.0));
  }

  @Test
  void fastFailuresAreNoLatencySampleButDeadlinesAre() {
    EndpointLoad load = load();
    call(load, Duration.ofMillis(50), Status.Code.OK);

    call(load, Duration.ofMillis(200), Status.Code.UNAVAILABLE);
    assertThat(load.latencyNanos()).isEqualTo(50e6);

    call(load, Duration.ofMillis(300), Status.Code.DEADLINE_EXCEEDED);
    assertThat(load.latencyNanos()).isEqualTo(300e6);
  }

  @Test
  void successRatioFollowsFailuresWithTimeDecay() {
    EndpointLoad load = load();

    call(load, Duration.ofSeconds(1), Status.Code.UNAVAILABLE);

    double s = Math.exp(-1); // 1 + (1 - e^-1)(0 - 1)
    assertThat(load.successRatio()).isCloseTo(s, within(1e-12));
    assertThat(load.errorCost()).isCloseTo(WeightedPolicyConfig.DEFAULT_ERROR_PENALTY * (1 - s), within(1e-12));
    assertThat(load.penalty()).isEqualTo(1.0);
  }

  @Test
  void successRatioRecoversWithSuccesses() {
    EndpointLoad load = load();
    call(load, Duration.ofSeconds(1), Status.Code.UNAVAILABLE);
    double afterFailure = load.successRatio();

    call(load, Duration.ofSeconds(2), Status.Code.OK);

    double expected = afterFailure + (1 - Math.exp(-2)) * (1 - afterFailure);
    assertThat(load.successRatio()).isCloseTo(expected, within(1e-12));
  }

  @Test
  void errorCostOfAServerFailingEveryCallIsTheErrorPenalty() {
    EndpointLoad load = load(WeightedPolicyConfig.builder().errorPenalty(3).build());
    for (int i = 0; i < 20; i++) {
      call(load, Duration.ofSeconds(5), Status.Code.INTERNAL);
    }

    assertThat(load.errorCost()).isCloseTo(3.0, within(1e-6)).isLessThanOrEqualTo(3.0);
  }

  @Test
  void errorCostFallsBackToZeroAsTheServerRecovers() {
    EndpointLoad load = load();
    for (int i = 0; i < 5; i++) {
      call(load, Duration.ofSeconds(1), Status.Code.UNAVAILABLE);
    }
    double failing = load.errorCost();

    call(load, Duration.ofSeconds(1), Status.Code.OK);
    double recovering = load.errorCost();
    for (int i = 0; i < 20; i++) {
      call(load, Duration.ofSeconds(1), Status.Code.OK);
    }

    assertThat(recovering).isLessThan(failing);
    assertThat(recovering).isCloseTo(failing * Math.exp(-1), within(1e-9));
    assertThat(load.errorCost()).isCloseTo(0.0, within(1e-6));
  }

  @Test
  void callerSideCodesDoNotCountAsFailures() {
    EndpointLoad load = load();

    call(load, Duration.ofSeconds(1), Status.Code.CANCELLED);
    call(load, Duration.ofSeconds(1), Status.Code.NOT_FOUND);
    call(load, Duration.ofSeconds(1), Status.Code.INVALID_ARGUMENT);

    assertThat(load.successRatio()).isEqualTo(1.0);
    assertThat(load.outstanding()).isZero();
  }

  @Test
  void errorPenaltyZeroIgnoresFailures() {
    EndpointLoad load = load(WeightedPolicyConfig.builder().errorPenalty(0).build());

    call(load, Duration.ofSeconds(1), Status.Code.UNAVAILABLE);

    assertThat(load.errorCost()).isZero();
    assertThat(load.penalty()).isEqualTo(1.0);
  }

  @Test
  void errorPenaltyScalesTheFailureRatio() {
    EndpointLoad load = load(WeightedPolicyConfig.builder().errorPenalty(4).build());

    call(load, Duration.ofSeconds(1), Status.Code.UNAVAILABLE);

    assertThat(load.errorCost()).isCloseTo(4 * (1 - Math.exp(-1)), within(1e-12));
  }

  @Test
  void reportedUtilizationStretchesThePenaltyLikeResponseTimeAtThatUtilization() {
    EndpointLoad load = load();

    load.reportUtilization(0.5);
    assertThat(load.penalty()).isCloseTo(2.0, within(1e-12));

    load.reportUtilization(0.75);
    assertThat(load.penalty()).isCloseTo(4.0, within(1e-12));

    load.reportUtilization(3.0); // saturated: capped at 1 / (1 - 0.95)
    assertThat(load.penalty()).isCloseTo(20.0, within(1e-9));
  }

  @Test
  void reportedUtilizationAndErrorsAreSeparateTerms() {
    EndpointLoad load = load();
    call(load, Duration.ofSeconds(1), Status.Code.UNAVAILABLE);

    load.reportUtilization(0.5);

    assertThat(load.penalty()).isCloseTo(2.0, within(1e-12));
    assertThat(load.errorCost()).isCloseTo(WeightedPolicyConfig.DEFAULT_ERROR_PENALTY * (1 - Math.exp(-1)), within(1e-12));
  }

  @Test
  void invalidUtilizationIsIgnored() {
    EndpointLoad load = load();
    load.reportUtilization(0.5);

    load.reportUtilization(Double.NaN);
    load.reportUtilization(-1);
    load.reportUtilization(Double.POSITIVE_INFINITY);

    assertThat(load.penalty()).isCloseTo(2.0, within(1e-12));
  }

  @Test
  void reconfiguringKeepsTheStateAndAppliesTheNewErrorPenalty() {
    EndpointLoad load = load();
    call(load, Duration.ofSeconds(1), Status.Code.UNAVAILABLE);
    load.callStarted();

    load.configure(WeightedPolicyConfig.builder().errorPenalty(1).build());

    assertThat(load.outstanding()).isEqualTo(1);
    assertThat(load.errorCost()).isCloseTo(1 - Math.exp(-1), within(1e-12));
  }
}
