package io.steelyard.balancer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

class EffectiveWeightsTest {

  private final EffectiveWeights weights = new EffectiveWeights("weighted_random");
  private final ch.qos.logback.classic.Logger logger =
      (ch.qos.logback.classic.Logger) LoggerFactory.getLogger(EffectiveWeights.class);
  private final ListAppender<ILoggingEvent> appender = new ListAppender<>();

  @BeforeEach
  void captureLogs() {
    appender.start();
    logger.addAppender(appender);
  }

  @AfterEach
  void releaseLogs() {
    logger.detachAppender(appender);
  }

  private long warnings() {
    return appender.list.stream().filter(e -> e.getLevel() == Level.WARN).count();
  }

  @Test
  void positiveWeightsCountAsDeclared() {
    assertThat(weights.compute(new int[] {1, 5, 1_000_000})).containsExactly(1, 5, 1_000_000);
  }

  @Test
  void drainedEndpointIsNotEligibleWhileAnotherHasAPositiveWeight() {
    assertThat(weights.compute(new int[] {0, 3, 0})).containsExactly(0, 3, 0);
    assertThat(warnings()).isZero();
  }

  @Test
  void allDrainedMakesEveryEndpointEligibleWithEqualWeightsAndWarnsOnce() {
    assertThat(weights.compute(new int[] {0, 0, 0})).containsExactly(1, 1, 1);
    assertThat(weights.compute(new int[] {0, 0})).containsExactly(1, 1);

    assertThat(warnings()).isOne();
    assertThat(appender.list.get(0).getFormattedMessage())
        .startsWith("weighted_random: all 3 endpoints have weight 0");
  }

  @Test
  void enteringAllDrainedAgainWarnsAgain() {
    weights.compute(new int[] {0, 0});
    weights.compute(new int[] {0, 1});

    assertThat(weights.compute(new int[] {0, 0})).containsExactly(1, 1);
    assertThat(warnings()).isEqualTo(2);
  }

  @Test
  void noEndpointsIsNotAllDrained() {
    assertThat(weights.compute(new int[0])).isEmpty();
    assertThat(warnings()).isZero();
  }
}
