package io.steelyard.agent;

import com.google.common.base.Ticker;
import io.steelyard.registry.Validation;
import io.steelyard.registry.internal.EtcdErrors;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Samples a registration's {@link WeightSource} and decides which samples reach etcd.
 *
 * <ul>
 *   <li><b>Hysteresis</b>: a sample {@code s} replaces the weight {@code p} etcd holds only when
 *       {@code |s - p| >= minAbsoluteChange} <em>and</em> {@code |s - p| >= minRelativeChange × p}
 *       (the absolute floor keeps small weights from flapping 1 ↔ 2, the relative one keeps large
 *       weights from chasing noise). A change to or from 0 always passes: draining is a state,
 *       not a magnitude.
 *   <li><b>Rate limit</b>: at most one write per {@code minWriteInterval}; a change that passes
 *       the hysteresis inside the interval waits for the first sample after it, which publishes
 *       the freshest value. The first sample comes at a random point of the first interval, so a
 *       fleet started together does not sample (nor write) in step.
 *   <li><b>Operators win</b>: a weight someone else writes in etcd (the CLI's {@code weight set},
 *       {@code drain}, another tool) pauses the source, as does the application's own {@code
 *       setWeight}: their weight stays until the source is handed the weight back. That happens
 *       when someone restores the weight the source last published (what {@code undrain} does
 *       after a {@code drain}) or the application calls {@code resumeWeightSource()}. Samples
 *       taken while paused are not written.
 * </ul>
 *
 * <p>Threading: confined to the registration's serial executor; timers run on the injected
 * scheduler and time is read from the injected ticker, so tests run it under fake time.
 */
final class WeightPublisher {

  /** What the publisher writes through: the registration. Called on the serial executor. */
  interface Sink {
    /** The weight etcd holds for the key as far as the registration knows (or will write next). */
    int weight();

    /** Whether a write goes to etcd now (the registration is REGISTERED). */
    boolean registered();

    /** Writes {@code w}, lease kept and revision-guarded; completes on etcd's answer. */
    CompletableFuture<Void> publish(int w);

    /** Remembers {@code w} for the next registration to write. */
    void remember(int w);
  }

  /** The sampling settings, validated by the builder. */
  record Settings(
      long sampleIntervalNanos,
      long minWriteIntervalNanos,
      double minRelativeChange,
      int minAbsoluteChange) {}

  private static final Logger logger = LoggerFactory.getLogger(WeightPublisher.class);

  private final WeightSource source;
  private final Settings settings;
  private final ScheduledExecutorService scheduler;
  private final Executor serial;
  private final Ticker ticker;
  private final Random random;
  private final String who;
  private final Sink sink;

  // serial
  private boolean started;
  private boolean closed;
  private boolean writing;
  private boolean wroteOnce;
  private long lastWriteNanos;
  /** The weight the source last got into etcd (or into a registration); -1 before any. */
  private int sourceWeight = -1;
  private int badSamples;
  @Nullable private Future<?> next;
  /** Whether an operator's (or the application's) weight holds; read by any thread. */
  private volatile boolean paused;

  WeightPublisher(
      WeightSource source,
      Settings settings,
      ScheduledExecutorService scheduler,
      Executor serial,
      Ticker ticker,
      Random random,
      String who,
      Sink sink) {
    this.source = source;
    this.settings = settings;
    this.scheduler = scheduler;
    this.serial = serial;
    this.ticker = ticker;
    this.random = random;
    this.who = who;
    this.sink = sink;
  }

  boolean paused() {
    return paused;
  }

  /** The weight the source last got into etcd, or -1. */
  int sourceWeight() {
    return sourceWeight;
  }

  /**
   * Takes the first sample, for the first registration to write, and starts sampling: the next
   * sample at a random point of the first interval. Returns {@code fallback} if the sample fails.
   */
  int start(int fallback) {
    if (started || closed) {
      return fallback;
    }
    started = true;
    int first = sample();
    if (first >= 0) {
      sourceWeight = first;
    }
    schedule((long) (random.nextDouble() * settings.sampleIntervalNanos()));
    return first >= 0 ? first : fallback;
  }

  /** Stops sampling; nothing runs after it. */
  void close() {
    closed = true;
    if (next != null) {
      next.cancel(false);
      next = null;
    }
  }

  /** The registration wrote {@code w} with a new lease. */
  void onRegistered(int w) {
    if (!paused) {
      sourceWeight = w;
    }
  }

  /**
   * Someone else wrote {@code w} in etcd (already adopted by the registration). Pauses the source,
   * or resumes it if {@code w} is the weight the source last published.
   */
  void onForeignWeight(int w) {
    if (closed) {
      return;
    }
    if (paused && w == sourceWeight) {
      paused = false;
      logger.info(
          "Weight of {} is back at {}, the weight source's last: the source drives it again",
          who, w);
      schedule(0);
    } else if (!paused) {
      paused = true;
      logger.warn(
          "Weight of {} was set to {} in etcd by someone else (weight set, drain?): the weight"
              + " source is paused until its last weight ({}) is restored (undrain) or"
              + " resumeWeightSource() is called",
          who, w, sourceWeight);
    }
  }

  /** The application set the weight itself: its weight holds until {@link #resume()}. */
  void pin(int w) {
    if (!closed && !paused) {
      paused = true;
      logger.info(
          "Weight of {} set to {} by setWeight: the weight source is paused until"
              + " resumeWeightSource()",
          who, w);
    }
  }

  /** Hands the weight back to the source; samples at once. */
  void resume() {
    if (closed || !paused) {
      return;
    }
    paused = false;
    logger.info("Weight source of {} resumed", who);
    schedule(0);
  }

  private void onTimer() {
    next = null;
    if (closed) {
      return;
    }
    int s = sample();
    if (s >= 0 && !paused) {
      consider(s);
    }
    schedule(settings.sampleIntervalNanos());
  }

  /** One sample, or -1 (logged) when the source fails or answers out of range. */
  private int sample() {
    int s;
    try {
      s = source.weight();
    } catch (RuntimeException e) {
      badSample("threw", e);
      return -1;
    }
    if (!Validation.isValidWeight(s)) {
      badSample("answered " + s + " (expected: 0.." + Validation.MAX_WEIGHT + ")", null);
      return -1;
    }
    badSamples = 0;
    return s;
  }

  private void badSample(String what, @Nullable Throwable cause) {
    // Once at the start of a streak, then every 100th: a broken source must not flood the log.
    if (badSamples++ % 100 == 0) {
      logger.warn("Weight source of {} {}; sample skipped ({} in a row)", who, what, badSamples, cause);
    }
  }

  private void consider(int s) {
    int p = sink.weight();
    if (!passes(p, s)) {
      return;
    }
    if (!sink.registered()) {
      sink.remember(s);
      sourceWeight = s;
      return;
    }
    long now = ticker.read();
    if (writing || (wroteOnce && now - lastWriteNanos < settings.minWriteIntervalNanos())) {
      logger.debug("Weight of {} would change {} -> {}; rate-limited", who, p, s);
      return;
    }
    writing = true;
    wroteOnce = true;
    lastWriteNanos = now;
    sink.publish(s)
        .whenCompleteAsync(
            (v, t) -> {
              writing = false;
              if (t == null) {
                sourceWeight = s;
              } else {
                logger.info(
                    "Weight source of {}: writing {} failed; the next sample after {} ms tries"
                        + " again: {}",
                    who, s, TimeUnit.NANOSECONDS.toMillis(settings.minWriteIntervalNanos()),
                    EtcdErrors.message(t));
              }
            },
            serial);
  }

  /** Whether {@code s} differs enough from {@code p} to be published; see the class comment. */
  boolean passes(int p, int s) {
    if (s == p) {
      return false;
    }
    if ((p == 0) != (s == 0)) {
      return true;
    }
    int d = Math.abs(s - p);
    return d >= settings.minAbsoluteChange() && d >= settings.minRelativeChange() * p;
  }

  private void schedule(long delayNanos) {
    if (closed) {
      return;
    }
    if (next != null) {
      next.cancel(false);
    }
    next =
        scheduler.schedule(
            () -> serial.execute(this::onTimer), Math.max(0, delayNanos), TimeUnit.NANOSECONDS);
  }
}
