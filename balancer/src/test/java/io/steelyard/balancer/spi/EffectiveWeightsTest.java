package io.steelyard.balancer.spi;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/** The eligibility rule every balancer and integration calls: drain, and every endpoint drained. */
class EffectiveWeightsTest {

  private final EffectiveWeights weights = new EffectiveWeights("weighted_random");
  private final ch.qos.logback.classic.Logger logger =
      (ch.qos.logback.classic.Logger) LoggerFactory.getLogger(EffectiveWeights.class);
  private final ListAppender<ILoggingEvent> appender = new ListAppender<>();

  private Level levelBefore;

  @BeforeEach
  void captureLogs() {
    levelBefore = logger.getLevel();
    logger.setLevel(Level.INFO);
    appender.start();
    logger.addAppender(appender);
  }

  @AfterEach
  void releaseLogs() {
    logger.detachAppender(appender);
    logger.setLevel(levelBefore);
  }

  /** The all-drained lines: at INFO, since every endpoint drained is also a normal shutdown. */
  private long notices() {
    assertThat(appender.list).noneMatch(e -> e.getLevel().isGreaterOrEqual(Level.WARN));
    return appender.list.stream().filter(e -> e.getLevel() == Level.INFO).count();
  }

  @Test
  void positiveWeightsCountAsDeclared() {
    assertThat(weights.compute(new int[] {1, 5, 1_000_000})).containsExactly(1, 5, 1_000_000);
  }

  @Test
  void drainedEndpointIsNotEligibleWhileAnotherHasAPositiveWeight() {
    assertThat(weights.compute(new int[] {0, 3, 0})).containsExactly(0, 3, 0);
    assertThat(notices()).isZero();
  }

  @Test
  void allDrainedMakesEveryEndpointEligibleWithEqualWeightsAndSaysSoOnce() {
    assertThat(weights.compute(new int[] {0, 0, 0})).containsExactly(1, 1, 1);
    assertThat(weights.compute(new int[] {0, 0})).containsExactly(1, 1);

    assertThat(notices()).isOne();
    assertThat(appender.list.get(0).getFormattedMessage())
        .startsWith("weighted_random: every endpoint (3) is drained (weight 0)");
  }

  @Test
  void enteringAllDrainedAgainSaysSoAgain() {
    weights.compute(new int[] {0, 0});
    weights.compute(new int[] {0, 1});

    assertThat(weights.compute(new int[] {0, 0})).containsExactly(1, 1);
    assertThat(notices()).isEqualTo(2);
  }

  @Test
  void noEndpointsIsNotAllDrained() {
    assertThat(weights.compute(new int[0])).isEmpty();
    assertThat(notices()).isZero();
  }

  @Test
  void thePureRuleGivesTheSameWeightsWithoutLoggingOrChangingItsArgument() {
    int[] declared = {0, 0};

    assertThat(EffectiveWeights.of(declared)).containsExactly(1, 1);
    assertThat(EffectiveWeights.of(new int[] {0, 4})).containsExactly(0, 4);
    assertThat(declared).containsExactly(0, 0);
    assertThat(notices()).isZero();
  }

  @Test
  void allDrainedNeedsAtLeastOneEndpointAndNoPositiveWeight() {
    assertThat(EffectiveWeights.allDrained(new int[] {0, 0})).isTrue();
    assertThat(EffectiveWeights.allDrained(new int[] {0, 1})).isFalse();
    assertThat(EffectiveWeights.allDrained(new int[0])).isFalse();
  }
}
