package io.steelyard.xds;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

class StreamLimitsTest {

  private static StreamLimits limits(int perPeer, int total) {
    return new StreamLimits(perPeer, total, 10, new XdsMetrics(new SimpleMeterRegistry(), null));
  }

  @Test
  void aPeerOverItsBoundIsRefusedWithTheBoundNamedWhileOtherPeersAreNot() {
    StreamLimits limits = limits(2, 100);
    assertThat(limits.acquire("10.0.0.1")).isNull();
    assertThat(limits.acquire("10.0.0.1")).isNull();
    assertThat(limits.acquire("10.0.0.1"))
        .isEqualTo("more than 2 concurrent xDS streams from 10.0.0.1 (--max-streams-per-peer)");
    assertThat(limits.acquire("10.0.0.2")).isNull();
    assertThat(limits.open()).isEqualTo(3);
  }

  @Test
  void aReleasedStreamGivesItsSlotBack() {
    StreamLimits limits = limits(1, 100);
    assertThat(limits.acquire("10.0.0.1")).isNull();
    assertThat(limits.acquire("10.0.0.1")).isNotNull();
    limits.release("10.0.0.1");
    assertThat(limits.open()).isZero();
    assertThat(limits.acquire("10.0.0.1")).isNull();
  }

  @Test
  void theTotalBoundHoldsAcrossPeers() {
    StreamLimits limits = limits(10, 2);
    assertThat(limits.acquire("10.0.0.1")).isNull();
    assertThat(limits.acquire("10.0.0.2")).isNull();
    assertThat(limits.acquire("10.0.0.3"))
        .isEqualTo("more than 2 concurrent xDS streams in total (--max-streams)");
    assertThat(limits.open()).isEqualTo(2);
    limits.release("10.0.0.1");
    assertThat(limits.acquire("10.0.0.3")).isNull();
  }

  @Test
  void boundsBelowOneAreRefused() {
    assertThatThrownBy(() -> limits(0, 10)).isInstanceOf(IllegalArgumentException.class);
  }
}
