package io.steelyard.balancer.spi;

import static com.google.common.base.Preconditions.checkArgument;
import static com.google.common.base.Preconditions.checkState;
import static java.util.Objects.requireNonNull;

import com.google.common.collect.ImmutableSortedSet;
import java.math.BigDecimal;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;
import javax.annotation.concurrent.Immutable;

/**
 * The parsed {@code loadBalancingConfig} entry of a weighted policy, e.g. the {@code
 * {"choiceCount": 4}} in {@code {"loadBalancingConfig": [{"weighted_least_request":
 * {"choiceCount": 4}}]}}: what the channel hands the balancer in {@code
 * ResolvedAddresses.getLoadBalancingPolicyConfig()} and the balancer hands each {@link
 * PickerFactory}.
 *
 * <p>Every weighted policy reads the {@link #COMMON_FIELDS}: the client subset ({@code
 * subsetSize}, {@code subsetClientId}: {@link ClientSubset}), {@link
 * #FIELD_PANIC_THRESHOLD_PERCENT} (0..100, default 0 = off: when fewer than this share of the
 * endpoints are usable, pick among every endpoint that still has a connection) and {@link
 * SlowStartConfig#FIELD} (off by default) and metadata selection {@link
 * EndpointSelection#FIELD_SUBSET} and {@link EndpointSelection#FIELD_SPLIT} (off by default). {@code
 * weighted_least_request} (and its ORCA variant) also reads the {@link #LEAST_REQUEST_FIELDS}. A
 * field a policy does not read keeps its default here, so one immutable class serves every policy.
 *
 * <pre>{@code
 * WeightedPolicyConfig config = WeightedPolicyConfig.builder()
 *     .choiceCount(4)
 *     .slowStart(new SlowStartConfig(TimeUnit.SECONDS.toNanos(30), 1.0, 10))
 *     .build();
 * }</pre>
 *
 * <p>A provider ({@code io.steelyard.balancer.WeightedPolicyProvider}) parses the raw JSON into
 * this class: a field it does not know is ignored with a logged warning, a known field with a bad
 * value is a config error naming the policy, the field and what was expected, e.g. {@code
 * "weighted_least_request.choiceCount: 11 (expected: 2..10)"}.
 */
@Immutable
public final class WeightedPolicyConfig {

  /** Every policy: below this share of usable endpoints (percent), picks ignore exclusions. */
  public static final String FIELD_PANIC_THRESHOLD_PERCENT = "panicThresholdPercent";

  /** Every policy: how many endpoints this client keeps (its client subset), 1..10,000. */
  public static final String FIELD_SUBSET_SIZE = "subsetSize";

  /** Every policy: this client's identity for its client subset; default {@code $HOSTNAME}. */
  public static final String FIELD_SUBSET_CLIENT_ID = "subsetClientId";

  /** The fields every weighted policy reads, on top of its own. */
  public static final Set<String> COMMON_FIELDS =
      ImmutableSortedSet.of(
          FIELD_SUBSET_SIZE,
          FIELD_SUBSET_CLIENT_ID,
          FIELD_PANIC_THRESHOLD_PERCENT,
          SlowStartConfig.FIELD,
          ZoneRoutingConfig.FIELD,
          EndpointSelection.FIELD_SUBSET,
          EndpointSelection.FIELD_SPLIT);

  /** {@code weighted_least_request}: candidates drawn per pick, 2..10. */
  public static final String FIELD_CHOICE_COUNT = "choiceCount";

  /** {@code weighted_least_request}: whether the score includes the peak-EWMA latency term. */
  public static final String FIELD_LATENCY = "latency";

  /** {@code weighted_least_request}: time constant of the latency and success averages. */
  public static final String FIELD_DECAY = "decay";

  /** {@code weighted_least_request}: score added for a failure ratio of 1, 0 = off. */
  public static final String FIELD_ERROR_PENALTY = "errorPenalty";

  /** The fields of {@code weighted_least_request} (and of policies built on it). */
  public static final Set<String> LEAST_REQUEST_FIELDS =
      ImmutableSortedSet.of(FIELD_CHOICE_COUNT, FIELD_LATENCY, FIELD_DECAY, FIELD_ERROR_PENALTY);

  /**
   * Default {@value}, one more than grpc's and Envoy's least request: with two candidates a call
   * meets a server failing some of its calls in nearly half the picks, and the healthy servers'
   * queues grew to keep it from the failing one; a third candidate more often finds a healthy
   * server with a free worker. In the capacity benchmark's scenario (d) it brought p99 from 1.2x
   * the best policy's to within 1.1x + 3 ms by the median of five runs in every mix, still failing
   * the fewest calls (see docs/benchmarks.md); a pick costs one more draw and one more load read.
   * Four candidates measured no better there.
   */
  public static final int DEFAULT_CHOICE_COUNT = 3;

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
   * Default {@value}: a server failing half its calls (cost 1.125) is picked over another only when
   * the other's queue holds about a capacity more than its own. In the capacity benchmark's
   * scenario (d) this is the setting measured that fails fewer calls than every other policy in
   * the mix where the failing server is half the capacity and keeps p99 near the best: 3 kept the
   * healthy servers' queues too long (p99 1.2-1.3x the best), 2 sent the failing server more
   * calls than a weight-blind least request does (see docs/benchmarks.md).
   */
  public static final double DEFAULT_ERROR_PENALTY = 2.25;

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
  @Nullable private final ClientSubset clientSubset;
  private final int panicThresholdPercent;
  @Nullable private final SlowStartConfig slowStart;
  private final ZoneRoutingConfig zoneRouting;
  @Nullable private final EndpointSelection endpointSelection;

  private WeightedPolicyConfig(Builder builder) {
    this.choiceCount = orDefault(builder.choiceCount, DEFAULT_CHOICE_COUNT);
    this.latency = orDefault(builder.latency, DEFAULT_LATENCY);
    this.decayNanos = orDefault(builder.decayNanos, DEFAULT_DECAY_NANOS);
    this.errorPenalty = orDefault(builder.errorPenalty, DEFAULT_ERROR_PENALTY);
    this.clientSubset = builder.clientSubset;
    this.panicThresholdPercent = orDefault(builder.panicThresholdPercent, 0);
    this.slowStart = builder.slowStart;
    this.zoneRouting = orDefault(builder.zoneRouting, ZoneRoutingConfig.DEFAULT);
    this.endpointSelection = builder.endpointSelection;
  }

  private static <T> T orDefault(@Nullable T value, T defaultValue) {
    return value != null ? value : defaultValue;
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

  /** The client subset this client keeps, or null when {@code subsetSize} is not set: every endpoint. */
  @Nullable
  public ClientSubset clientSubset() {
    return clientSubset;
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

  /** Zone-aware routing ({@link ZoneRoutingConfig#DEFAULT} unless set). */
  public ZoneRoutingConfig zoneRouting() {
    return zoneRouting;
  }

  /**
   * The endpoints picked from by metadata ({@code subset} or {@code split}), or null (the
   * default) for every endpoint.
   */
  @Nullable
  public EndpointSelection endpointSelection() {
    return endpointSelection;
  }

  private static String formatDuration(long nanos) {
    return BigDecimal.valueOf(nanos).movePointLeft(9).stripTrailingZeros().toPlainString() + "s";
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
        && Objects.equals(clientSubset, that.clientSubset)
        && panicThresholdPercent == that.panicThresholdPercent
        && Objects.equals(slowStart, that.slowStart)
        && zoneRouting.equals(that.zoneRouting)
        && Objects.equals(endpointSelection, that.endpointSelection);
  }

  @Override
  public int hashCode() {
    return Objects.hash(
        choiceCount,
        latency,
        decayNanos,
        errorPenalty,
        clientSubset,
        panicThresholdPercent,
        slowStart,
        zoneRouting,
        endpointSelection);
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
        + (clientSubset == null ? "" : ", clientSubset=" + clientSubset)
        + (panicThresholdPercent == 0 ? "" : ", panicThresholdPercent=" + panicThresholdPercent)
        + (slowStart == null ? "" : ", slowStart=" + slowStart)
        + (zoneRouting.equals(ZoneRoutingConfig.DEFAULT) ? "" : ", zoneRouting=" + zoneRouting)
        + (endpointSelection == null ? "" : ", " + endpointSelection)
        + "}";
  }

  /**
   * Builds a {@link WeightedPolicyConfig}; a setting left out keeps its default, and setting one
   * twice is a mistake that throws {@link IllegalStateException}.
   */
  public static final class Builder {
    @Nullable private Integer choiceCount;
    @Nullable private Boolean latency;
    @Nullable private Long decayNanos;
    @Nullable private Double errorPenalty;
    @Nullable private ClientSubset clientSubset;
    @Nullable private Integer panicThresholdPercent;
    @Nullable private SlowStartConfig slowStart;
    @Nullable private ZoneRoutingConfig zoneRouting;
    @Nullable private EndpointSelection endpointSelection;

    private Builder() {}

    /** Candidates per pick, {@code 2..10}; default {@value WeightedPolicyConfig#DEFAULT_CHOICE_COUNT}. */
    public Builder choiceCount(int choiceCount) {
      checkState(this.choiceCount == null, "choiceCount already set");
      checkArgument(
          choiceCount >= MIN_CHOICE_COUNT && choiceCount <= MAX_CHOICE_COUNT,
          "choiceCount: %s (expected: %s..%s)",
          choiceCount,
          MIN_CHOICE_COUNT,
          MAX_CHOICE_COUNT);
      this.choiceCount = choiceCount;
      return this;
    }

    /** Whether the score includes the peak-EWMA latency; default off. */
    public Builder latency(boolean latency) {
      checkState(this.latency == null, "latency already set");
      this.latency = latency;
      return this;
    }

    /** Time constant of the latency and success averages, {@code > 0}; default 1 s. */
    public Builder decayNanos(long decayNanos) {
      checkState(this.decayNanos == null, "decay already set");
      checkArgument(decayNanos > 0, "decayNanos: %s (expected: > 0)", decayNanos);
      this.decayNanos = decayNanos;
      return this;
    }

    /**
     * Score added for a failure ratio of 1, in capacities, {@code 0..8}; 0 ignores errors;
     * default {@value WeightedPolicyConfig#DEFAULT_ERROR_PENALTY}.
     */
    public Builder errorPenalty(double errorPenalty) {
      checkState(this.errorPenalty == null, "errorPenalty already set");
      checkArgument(
          errorPenalty >= 0 && errorPenalty <= MAX_ERROR_PENALTY,
          "errorPenalty: %s (expected: 0..%s)",
          errorPenalty,
          MAX_ERROR_PENALTY);
      this.errorPenalty = errorPenalty;
      return this;
    }

    /** See {@link WeightedPolicyConfig#clientSubset()}; not set (the default) keeps every endpoint. */
    public Builder clientSubset(ClientSubset clientSubset) {
      checkState(this.clientSubset == null, "clientSubset already set");
      this.clientSubset = requireNonNull(clientSubset, "clientSubset");
      return this;
    }

    /** See {@link WeightedPolicyConfig#panicThresholdPercent()}; 0..100, default 0 (off). */
    public Builder panicThresholdPercent(int percent) {
      checkState(this.panicThresholdPercent == null, "panicThresholdPercent already set");
      checkArgument(
          percent >= 0 && percent <= 100,
          "%s: %s (expected: 0..100)",
          FIELD_PANIC_THRESHOLD_PERCENT,
          percent);
      this.panicThresholdPercent = percent;
      return this;
    }

    /** See {@link WeightedPolicyConfig#slowStart()}; not set (the default) is off. */
    public Builder slowStart(SlowStartConfig slowStart) {
      checkState(this.slowStart == null, "slowStart already set");
      this.slowStart = requireNonNull(slowStart, "slowStart");
      return this;
    }

    /** See {@link WeightedPolicyConfig#zoneRouting()}; not set is {@link ZoneRoutingConfig#DEFAULT}. */
    public Builder zoneRouting(ZoneRoutingConfig zoneRouting) {
      checkState(this.zoneRouting == null, "zoneRouting already set");
      this.zoneRouting = requireNonNull(zoneRouting, "zoneRouting");
      return this;
    }

    /** See {@link WeightedPolicyConfig#endpointSelection()}; not set (the default): all endpoints. */
    public Builder endpointSelection(EndpointSelection endpointSelection) {
      checkState(this.endpointSelection == null, "endpointSelection already set");
      this.endpointSelection = requireNonNull(endpointSelection, "endpointSelection");
      return this;
    }

    public WeightedPolicyConfig build() {
      return new WeightedPolicyConfig(this);
    }
  }
}
