package io.steelyard.agent;

import io.steelyard.testkit.time.FakeScheduler;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The weight source's decisions under fake time: hysteresis, rate limit, operator precedence. The
 * sink stands in for the registration (its etcd writes are {@code WeightSourceIT}'s).
 */
class WeightPublisherTest {

  private static final Duration SAMPLE = Duration.ofSeconds(5);
  private static final Duration MIN_WRITE = Duration.ofSeconds(30);

  private final FakeScheduler fake = new FakeScheduler();
  private final AtomicInteger signal = new AtomicInteger(100);
  private final Sink sink = new Sink();

  /** A registration that is REGISTERED and whose writes succeed at once. */
  private static final class Sink implements WeightPublisher.Sink {
    int etcd;
    boolean registered = true;
    final List<Integer> writes = new ArrayList<>();
    int remembered = -1;

    @Override
    public int weight() {
      return etcd;
    }

    @Override
    public boolean registered() {
      return registered;
    }

    @Override
    public CompletableFuture<Void> publish(int w) {
      writes.add(w);
      etcd = w;
      return CompletableFuture.completedFuture(null);
    }

    @Override
    public void remember(int w) {
      remembered = w;
    }
  }

  /** nextDouble() is 0: the first periodic sample comes right after start. */
  private static Random firstSampleAtOnce() {
    return new Random() {
      private static final long serialVersionUID = 1L;

      @Override
      public double nextDouble() {
        return 0;
      }
    };
  }

  private WeightPublisher publisher(double relative, int absolute, WeightSource source, Random random) {
    return new WeightPublisher(
        source,
        new WeightPublisher.Settings(SAMPLE.toNanos(), MIN_WRITE.toNanos(), relative, absolute),
        fake, fake, fake.ticker, random, "greeter at 10.0.0.7:50051", sink);
  }

  /** Started with the defaults (10 %, 1); the registration wrote the first sample. */
  private WeightPublisher started() {
    WeightPublisher p = publisher(0.1, 1, signal::get, firstSampleAtOnce());
    sink.etcd = p.start(1);
    p.onRegistered(sink.etcd);
    fake.runDue();
    return p;
  }

  private void sampleWith(int value) {
    signal.set(value);
    fake.forwardTime(SAMPLE);
  }

  @Test
  void theFirstSampleIsTheWeightTheRegistrationWrites() {
    WeightPublisher p = publisher(0.1, 1, signal::get, firstSampleAtOnce());

    assertThat(p.start(1)).isEqualTo(100);
  }

  @Test
  void aFailingFirstSampleFallsBackToTheConfiguredWeight() {
    WeightPublisher p = publisher(0.1, 1, () -> { throw new IllegalStateException("not ready"); }, firstSampleAtOnce());

    assertThat(p.start(7)).isEqualTo(7);
  }

  @Test
  void theFirstPeriodicSampleComesAtARandomPointOfTheInterval() {
    Random half = new Random() {
      private static final long serialVersionUID = 1L;

      @Override
      public double nextDouble() {
        return 0.5;
      }
    };
    AtomicInteger samples = new AtomicInteger();
    WeightPublisher p = publisher(0.1, 1, () -> { samples.incrementAndGet(); return 100; }, half);
    p.start(1);
    assertThat(samples).hasValue(1);

    fake.forwardTime(SAMPLE.dividedBy(2).minusMillis(1));
    assertThat(samples).hasValue(1);
    fake.forwardTime(Duration.ofMillis(1));
    assertThat(samples).hasValue(2);
  }

  @Test
  void aChangeBelowTheRelativeThresholdIsNotPublished() {
    started();

    sampleWith(109); // 9 % of 100
    assertThat(sink.writes).isEmpty();

    sampleWith(110); // 10 %
    assertThat(sink.writes).containsExactly(110);
  }

  @Test
  void theAbsoluteFloorKeepsSmallWeightsFromFlapping() {
    signal.set(2);
    WeightPublisher p = publisher(0.1, 2, signal::get, firstSampleAtOnce());
    sink.etcd = p.start(1);
    fake.runDue();

    sampleWith(3); // +50 %, but only 1
    assertThat(sink.writes).isEmpty();
    sampleWith(1);
    assertThat(sink.writes).isEmpty();
    sampleWith(4); // +2
    assertThat(sink.writes).containsExactly(4);
  }

  @Test
  void atMostOneWritePerIntervalAndTheFreshestValueAfterIt() {
    started();

    sampleWith(200);
    assertThat(sink.writes).containsExactly(200);
    sampleWith(300); // 5 s after the write: rate-limited
    sampleWith(400);
    fake.forwardTime(MIN_WRITE.minus(SAMPLE.multipliedBy(3))); // 25 s after the write
    assertThat(sink.writes).containsExactly(200);

    sampleWith(500); // 30 s after it: the value of now, not the ones in between
    assertThat(sink.writes).containsExactly(200, 500);
  }

  @Test
  void aChangeToOrFromZeroAlwaysPassesTheHysteresis() {
    WeightPublisher p = publisher(0.5, 10, signal::get, firstSampleAtOnce());
    signal.set(3);
    sink.etcd = p.start(1);
    fake.runDue();

    sampleWith(0);
    assertThat(sink.writes).containsExactly(0);
    fake.forwardTime(MIN_WRITE);
    sampleWith(2);
    assertThat(sink.writes).containsExactly(0, 2);
  }

  @Test
  void anOperatorsWeightPausesTheSourceUntilItsLastWeightIsRestored() {
    WeightPublisher p = started();
    sampleWith(200);
    fake.forwardTime(MIN_WRITE);
    assertThat(sink.writes).containsExactly(200);

    p.onForeignWeight(0); // steelyard drain
    sink.etcd = 0;
    assertThat(p.paused()).isTrue();
    sampleWith(300);
    fake.forwardTime(MIN_WRITE.multipliedBy(2));
    assertThat(sink.writes).containsExactly(200);

    p.onForeignWeight(7); // steelyard weight set: still the operator's
    sink.etcd = 7;
    fake.forwardTime(MIN_WRITE);
    assertThat(p.paused()).isTrue();
    assertThat(sink.writes).containsExactly(200);

    p.onForeignWeight(200); // steelyard undrain: back to the source's last weight
    sink.etcd = 200;
    fake.runDue();
    assertThat(p.paused()).isFalse();
    assertThat(sink.writes).containsExactly(200, 300); // sampled at once, published
  }

  @Test
  void setWeightPinsTheWeightUntilResumed() {
    WeightPublisher p = started();

    p.pin(42);
    sink.etcd = 42;
    sampleWith(300);
    fake.forwardTime(MIN_WRITE.multipliedBy(2));
    assertThat(sink.writes).isEmpty();

    p.resume();
    fake.runDue();
    assertThat(p.paused()).isFalse();
    assertThat(sink.writes).containsExactly(300);
  }

  @Test
  void aSourceThatFailsOrAnswersOutOfRangeSkipsTheSample() {
    AtomicInteger calls = new AtomicInteger();
    WeightPublisher p =
        publisher(0.1, 1, () -> switch (calls.incrementAndGet()) {
          case 1 -> 100;
          case 2 -> throw new IllegalStateException("metrics not ready");
          case 3 -> -5;
          case 4 -> 2_000_000;
          default -> 300;
        }, firstSampleAtOnce());
    sink.etcd = p.start(1);
    fake.runDue(); // sample 2: throws

    fake.forwardTime(SAMPLE); // -5
    fake.forwardTime(SAMPLE); // 2,000,000
    assertThat(sink.writes).isEmpty();
    fake.forwardTime(SAMPLE);
    assertThat(sink.writes).containsExactly(300);
  }

  @Test
  void aWeightChangedWhileNotRegisteredIsRememberedNotWritten() {
    started();
    sink.registered = false;

    sampleWith(250);

    assertThat(sink.writes).isEmpty();
    assertThat(sink.remembered).isEqualTo(250);
  }

  @Test
  void nothingRunsAfterClose() {
    WeightPublisher p = started();
    p.close();
    int ran = fake.ran();

    sampleWith(900);
    fake.forwardTime(Duration.ofHours(1));

    assertThat(fake.ran()).isEqualTo(ran);
    assertThat(fake.pending()).isZero();
    assertThat(sink.writes).isEmpty();
  }

  @Test
  void defaultsPublishTenPercentChangesAtMostTwicePerMinute() {
    assertThat(WeightSource.DEFAULT_MIN_RELATIVE_CHANGE).isEqualTo(0.1);
    assertThat(TimeUnit.MILLISECONDS.toSeconds(WeightSource.DEFAULT_MIN_WRITE_INTERVAL_MILLIS)).isEqualTo(30);
    assertThat(WeightSource.availableProcessors(10).weight())
        .isEqualTo(Runtime.getRuntime().availableProcessors() * 10);
    assertThat(WeightSource.availableProcessors(0.01).weight()).isEqualTo(1);
  }
}
