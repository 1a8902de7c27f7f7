package io.steelyard.balancer.internal;

import static com.google.common.base.Preconditions.checkArgument;
import static java.util.Objects.requireNonNull;

import com.google.common.collect.ImmutableSortedSet;
import io.grpc.NameResolver.ConfigOrError;
import io.grpc.Status;
import java.math.BigDecimal;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;
import javax.annotation.concurrent.Immutable;

/**
 * The parsed {@code loadBalancingConfig} entry of a weighted policy, e.g. the {@code
 * {"choiceCount": 3}} in {@code {"loadBalancingConfig": [{"weighted_least_request":
 * {"choiceCount": 3}}]}}.
 *
 * <p>Each policy accepts its own set of fields ({@link WeightedPolicy#fields()}): today {@code
 * weighted_random} and {@code weighted_round_robin_static} take none, and {@code
 * weighted_least_request} takes {@link #FIELD_CHOICE_COUNT}, {@link #FIELD_LATENCY}, {@link
 * #FIELD_DECAY} and {@link #FIELD_ERROR_PENALTY}. Every policy also takes deterministic subsetting
 * ({@link SubsetOption}: {@code subsetSize}, {@code subsetClientId}) and {@link
 * #FIELD_PANIC_THRESHOLD_PERCENT} (0..100, default 0 = off: when fewer than this share of the
 * endpoints are usable, pick among every endpoint that still has a connection; see {@link
 * EffectiveWeights#panic}) and {@link SlowStartConfig#FIELD} (off by default; see {@link
 * SlowStart}). A field a policy does not read keeps its default
 * here, so one immutable class serves every policy. The provider parses the raw JSON map, the
 * channel hands the result to the balancer in {@code
 * ResolvedAddresses.getLoadBalancingPolicyConfig()}, and bad input becomes a {@link ConfigOrError}
 * naming the policy, the field and what was expected, e.g. {@code
 * "weighted_least_request.choiceCount: 11 (expected: 2..10)"}.
 *
 * <p><b>Unknown fields are rejected</b>, not ignored: a misspelt option ({@code "slowstart"})
 * that silently did nothing would leave an operator believing it is on. The cost is that a
 * config written for a newer steelyard fails to parse in an older client; grpc-java then keeps
 * the channel's last good service config (gRFC A21), and a bad {@code defaultServiceConfig}
 * fails {@code build()} at once.
 */
@Immutable
public final class WeightedPolicyConfig {

  /** Every policy: below this share of usable endpoints (percent), picks ignore exclusions. */
  public static final String FIELD_PANIC_THRESHOLD_PERCENT = "panicThresholdPercent";

  /** Field names every weighted policy accepts on top of its own: deterministic subsetting. */
  static final Set<String> COMMON_FIELDS =
      ImmutableSortedSet.of(
          SubsetOption.SIZE,
          SubsetOption.CLIENT_ID,
          FIELD_PANIC_THRESHOLD_PERCENT,
          SlowStartConfig.FIELD);

  /** {@code weighted_least_request}: candidates drawn per pick, 2..10. */
  public static final String FIELD_CHOICE_COUNT = "choiceCount";

  /** {@code weighted_least_request}: whether the score includes the peak-EWMA latency term. */
  public static final String FIELD_LATENCY = "latency";

  /** {@code weighted_least_request}: time constant of the latency and success averages. */
  public static final String FIELD_DECAY = "decay";

  /** {@code weighted_least_request}: exponent of the success ratio in the score, 0 = off. */
  public static final String FIELD_ERROR_PENALTY = "errorPenalty";

  /** Default {@value}: the "power of two choices" (as grpc's and Envoy's least request). */
  public static final int DEFAULT_CHOICE_COUNT = 2;

  /** Smallest choice count: one candidate would be plain weighted random. */
  public static final int MIN_CHOICE_COUNT = 2;

  /** Largest choice count, as gRFC A48 caps {@code least_request_experimental}. */
  public static final int MAX_CHOICE_COUNT = 10;

  /**
   * Default 1 s: long enough to average a few hundred calls at modest rates, short enough that a
   * server failing half its calls is avoided within about 2 s (capacity benchmark, scenario d).
   */
  public static final long DEFAULT_DECAY_NANOS = TimeUnit.SECONDS.toNanos(1);

  /**
   * Default {@value}: the success ratio counts squared. One factor undoes the failing server's
   * fast failures (which lower its outstanding count), the other sends it less than its share.
   */
  public static final double DEFAULT_ERROR_PENALTY = 2.0;

  /** Largest error penalty accepted: beyond it the penalty is an ejection in all but name. */
  public static final double MAX_ERROR_PENALTY = 8.0;

  /**
   * Default off: in the capacity benchmark the latency term did not improve p99 over outstanding
   * calls alone in any scenario (docs/benchmarks.md, "latency term").
   */
  public static final boolean DEFAULT_LATENCY = false;

  /** The config of {@code {}}, and what the balancer assumes when the channel passes none. */
  public static final WeightedPolicyConfig DEFAULT = builder().build();

  private final int choiceCount;
  private final boolean latency;
  private final long decayNanos;
  private final double errorPenalty;
  @Nullable private final RendezvousSubset subset;
  private final int panicThresholdPercent;
  @Nullable private final SlowStartConfig slowStart;

  private WeightedPolicyConfig(Builder builder) {
    this.choiceCount = builder.choiceCount;
    this.latency = builder.latency;
    this.decayNanos = builder.decayNanos;
    this.errorPenalty = builder.errorPenalty;
    this.subset = builder.subset;
    this.panicThresholdPercent = builder.panicThresholdPercent;
    this.slowStart = builder.slowStart;
  }

  /** A builder starting from the defaults. */
  public static Builder builder() {
    return new Builder();
  }

  /** Candidates drawn per pick by {@code weighted_least_request}. */
  public int choiceCount() {
    return choiceCount;
  }

  /** Whether {@code weighted_least_request}'s score includes the peak-EWMA latency. */
  public boolean latency() {
    return latency;
  }

  /** Time constant of {@code weighted_least_request}'s latency and success averages. */
  public long decayNanos() {
    return decayNanos;
  }

  /** Exponent of the success ratio in {@code weighted_least_request}'s score; 0 = ignore errors. */
  public double errorPenalty() {
    return errorPenalty;
  }

  /** The subset this client keeps, or null when {@code subsetSize} is not set: every endpoint. */
  @Nullable
  public RendezvousSubset subset() {
    return subset;
  }

  /** Below this share of usable endpoints (percent), picks ignore exclusions; 0 means never. */
  public int panicThresholdPercent() {
    return panicThresholdPercent;
  }

  /** The slow-start ramp, or null (the default) when endpoints get their full weight at once. */
  @Nullable
  public SlowStartConfig slowStart() {
    return slowStart;
  }

  /**
   * Parses one policy's raw JSON config (Gson-style: maps, lists, strings, doubles, booleans),
   * accepting only {@code fields}. Never throws: bad input is a {@link ConfigOrError} with an
   * {@code UNAVAILABLE} status (gRFC A54 keeps control-plane errors off the codes applications
   * use) whose description names the policy and the field.
   */
  static ConfigOrError parse(String policyName, Set<String> fields, Map<String, ?> rawConfig) {
    requireNonNull(policyName, "policyName");
    if (rawConfig == null || rawConfig.isEmpty()) {
      return ConfigOrError.fromConfig(DEFAULT);
    }
    Builder builder = builder();
    for (Map.Entry<String, ?> entry : rawConfig.entrySet()) {
      String field = entry.getKey();
      if (field.equals(FIELD_PANIC_THRESHOLD_PERCENT)) {
        Object panic = entry.getValue();
        if (!isWholeNumber(panic)
            || ((Number) panic).doubleValue() < 0
            || ((Number) panic).doubleValue() > 100) {
          return error(policyName, field, panic + " (expected: a whole number 0..100)");
        }
        builder.panicThresholdPercent(((Number) panic).intValue());
        continue;
      }
      if (field.equals(SlowStartConfig.FIELD)) {
        ConfigOrError slowStart = SlowStartConfig.parse(policyName, entry.getValue());
        if (slowStart.getError() != null) {
          return slowStart;
        }
        builder.slowStart((SlowStartConfig) slowStart.getConfig());
        continue;
      }
      if (COMMON_FIELDS.contains(field)) {
        continue; // subsetting, parsed together below: one needs the other
      }
      if (!fields.contains(field)) {
        return error(
            policyName,
            field,
            "unknown field (expected: one of "
                + ImmutableSortedSet.naturalOrder().addAll(fields).addAll(COMMON_FIELDS).build()
                + ")");
      }
      Object value = entry.getValue();
      switch (field) {
        case FIELD_CHOICE_COUNT:
          if (!isWholeNumber(value)
              || ((Number) value).doubleValue() < MIN_CHOICE_COUNT
              || ((Number) value).doubleValue() > MAX_CHOICE_COUNT) {
            return error(
                policyName,
                field,
                value + " (expected: " + MIN_CHOICE_COUNT + ".." + MAX_CHOICE_COUNT + ")");
          }
          builder.choiceCount(((Number) value).intValue());
          break;
        case FIELD_LATENCY:
          if (!(value instanceof Boolean)) {
            return error(policyName, field, value + " (expected: true or false)");
          }
          builder.latency((Boolean) value);
          break;
        case FIELD_DECAY:
          long nanos = parseDuration(value);
          if (nanos <= 0) {
            return error(policyName, field, value + " (expected: a duration > 0s, e.g. \"1s\")");
          }
          builder.decayNanos(nanos);
          break;
        case FIELD_ERROR_PENALTY:
          if (!(value instanceof Number)
              || !(((Number) value).doubleValue() >= 0)
              || ((Number) value).doubleValue() > MAX_ERROR_PENALTY) {
            return error(policyName, field, value + " (expected: 0.." + MAX_ERROR_PENALTY + ")");
          }
          builder.errorPenalty(((Number) value).doubleValue());
          break;
        default:
          throw new AssertionError("field accepted but not parsed: " + field);
      }
    }
    if (rawConfig.containsKey(SubsetOption.SIZE) || rawConfig.containsKey(SubsetOption.CLIENT_ID)) {
      ConfigOrError subset = SubsetOption.parse(policyName, rawConfig, s -> s);
      if (subset.getError() != null) {
        return subset;
      }
      builder.subset((RendezvousSubset) subset.getConfig());
    }
    return ConfigOrError.fromConfig(builder.build());
  }

  private static boolean isWholeNumber(Object value) {
    if (!(value instanceof Number)) {
      return false;
    }
    double d = ((Number) value).doubleValue();
    return d == Math.rint(d) && !Double.isInfinite(d);
  }

  /**
   * A non-negative protobuf JSON duration ({@code "1.5s"}, as grpc-java's own configs write them)
   * in nanos, or -1 when {@code value} is not one. Hand-written: grpc's parser is in grpc-core's
   * internal package, and protobuf-java-util is a large dependency for one format.
   */
  public static long parseDuration(Object value) {
    if (!(value instanceof String) || !((String) value).matches("[0-9]{1,12}(\\.[0-9]{1,9})?s")) {
      return -1;
    }
    String seconds = (String) value;
    return new BigDecimal(seconds.substring(0, seconds.length() - 1))
        .movePointRight(9)
        .longValueExact();
  }

  private static String formatDuration(long nanos) {
    return BigDecimal.valueOf(nanos).movePointLeft(9).stripTrailingZeros().toPlainString() + "s";
  }

  private static ConfigOrError error(String policyName, String field, String message) {
    return ConfigOrError.fromError(
        Status.UNAVAILABLE.withDescription(policyName + "." + field + ": " + message));
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    if (!(o instanceof WeightedPolicyConfig)) {
      return false;
    }
    WeightedPolicyConfig that = (WeightedPolicyConfig) o;
    return choiceCount == that.choiceCount
        && latency == that.latency
        && decayNanos == that.decayNanos
        && Double.compare(errorPenalty, that.errorPenalty) == 0
        && Objects.equals(subset, that.subset)
        && panicThresholdPercent == that.panicThresholdPercent
        && Objects.equals(slowStart, that.slowStart);
  }

  @Override
  public int hashCode() {
    return Objects.hash(
        choiceCount, latency, decayNanos, errorPenalty, subset, panicThresholdPercent, slowStart);
  }

  @Override
  public String toString() {
    return "WeightedPolicyConfig{choiceCount="
        + choiceCount
        + ", latency="
        + latency
        + ", decay="
        + formatDuration(decayNanos)
        + ", errorPenalty="
        + errorPenalty
        + (subset == null ? "" : ", subset=" + subset)
        + (panicThresholdPercent == 0 ? "" : ", panicThresholdPercent=" + panicThresholdPercent)
        + (slowStart == null ? "" : ", slowStart=" + slowStart)
        + "}";
  }

  /** Builds a {@link WeightedPolicyConfig}; every setting starts at its default. */
  public static final class Builder {
    private int choiceCount = DEFAULT_CHOICE_COUNT;
    private boolean latency = DEFAULT_LATENCY;
    private long decayNanos = DEFAULT_DECAY_NANOS;
    private double errorPenalty = DEFAULT_ERROR_PENALTY;
    @Nullable private RendezvousSubset subset;
    private int panicThresholdPercent;
    @Nullable private SlowStartConfig slowStart;

    private Builder() {}

    /** Candidates per pick, {@code 2..10}. */
    public Builder choiceCount(int choiceCount) {
      checkArgument(
          choiceCount >= MIN_CHOICE_COUNT && choiceCount <= MAX_CHOICE_COUNT,
          "choiceCount: %s (expected: %s..%s)",
          choiceCount,
          MIN_CHOICE_COUNT,
          MAX_CHOICE_COUNT);
      this.choiceCount = choiceCount;
      return this;
    }

    /** Whether the score includes the peak-EWMA latency. */
    public Builder latency(boolean latency) {
      this.latency = latency;
      return this;
    }

    /** Time constant of the latency and success averages, {@code > 0}. */
    public Builder decayNanos(long decayNanos) {
      checkArgument(decayNanos > 0, "decayNanos: %s (expected: > 0)", decayNanos);
      this.decayNanos = decayNanos;
      return this;
    }

    /** Exponent of the success ratio, {@code 0..8}; 0 ignores errors. */
    public Builder errorPenalty(double errorPenalty) {
      checkArgument(
          errorPenalty >= 0 && errorPenalty <= MAX_ERROR_PENALTY,
          "errorPenalty: %s (expected: 0..%s)",
          errorPenalty,
          MAX_ERROR_PENALTY);
      this.errorPenalty = errorPenalty;
      return this;
    }

    /** Deterministic subsetting; null (the default) keeps every endpoint. */
    public Builder subset(@Nullable RendezvousSubset subset) {
      this.subset = subset;
      return this;
    }

    /** See {@link WeightedPolicyConfig#panicThresholdPercent()}; 0..100, default 0 (off). */
    public Builder panicThresholdPercent(int percent) {
      checkArgument(
          percent >= 0 && percent <= 100,
          "%s: %s (expected: 0..100)",
          FIELD_PANIC_THRESHOLD_PERCENT,
          percent);
      this.panicThresholdPercent = percent;
      return this;
    }

    /** See {@link WeightedPolicyConfig#slowStart()}; null (the default) is off. */
    public Builder slowStart(@Nullable SlowStartConfig slowStart) {
      this.slowStart = slowStart;
      return this;
    }

    public WeightedPolicyConfig build() {
      return new WeightedPolicyConfig(this);
    }
  }
}
