package io.steelyard.balancer.internal;

import static java.util.Objects.requireNonNull;

import com.google.common.cache.Cache;
import com.google.common.cache.CacheBuilder;
import com.google.common.collect.ImmutableSortedSet;
import io.grpc.NameResolver.ConfigOrError;
import io.grpc.Status;
import io.steelyard.balancer.spi.ClientSubset;
import io.steelyard.balancer.spi.SlowStartConfig;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import io.steelyard.balancer.spi.ZoneRoutingConfig;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.annotation.Nullable;
import javax.annotation.concurrent.ThreadSafe;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Parses one policy's raw JSON config (Gson-style: maps, lists, strings, doubles, booleans) into
 * a {@link WeightedPolicyConfig}. Never throws: a known field with a bad value is a {@link
 * ConfigOrError} with an {@code UNAVAILABLE} status (gRFC A54 keeps control-plane errors off the
 * codes applications use) whose description names the policy and the field, e.g. {@code
 * "weighted_least_request.choiceCount: 11 (expected: 2..10)"}.
 *
 * <p><b>Unknown fields are ignored</b>, with one warning per distinct config, as grpc-java's own
 * parsers ignore them: a config written for a newer version (set centrally, for every client)
 * must not silence the older clients. A resolver that supplies the service config (DNS TXT
 * records, a config kept in the registry) has grpc parse it again with every result it
 * publishes, i.e. on every instance change, so warning per parse would repeat the line with each
 * update; the parser remembers the last 64 configs it warned about instead. A misspelt field ({@code "slowstart"}) is therefore not an
 * error: the warning names it.
 *
 * <p>Threading: thread-safe; one per provider, shared by every channel that uses the policy.
 */
@ThreadSafe
public final class PolicyConfigParser {

  private static final Logger log = LoggerFactory.getLogger(PolicyConfigParser.class);

  /** Enough for every distinct config a process holds at once; older ones may warn again. */
  static final int REMEMBERED_CONFIGS = 64;

  private final String policyName;
  private final Set<String> knownFields;
  private final Cache<Map<String, ?>, Boolean> warned =
      CacheBuilder.newBuilder().maximumSize(REMEMBERED_CONFIGS).build();

  /**
   * The parser of {@code policyName}'s config, which reads the fields every weighted policy reads
   * ({@link WeightedPolicyConfig#COMMON_FIELDS}) and {@code policyFields}: those of {@link
   * WeightedPolicyConfig#LEAST_REQUEST_FIELDS} it lists are parsed here, the others are the
   * policy's own and skipped.
   */
  public PolicyConfigParser(String policyName, Set<String> policyFields) {
    this.policyName = requireNonNull(policyName, "policyName");
    this.knownFields =
        ImmutableSortedSet.<String>naturalOrder()
            .addAll(policyFields)
            .addAll(WeightedPolicyConfig.COMMON_FIELDS)
            .build();
  }

  /** Parses {@code rawConfig}; null or empty is {@link WeightedPolicyConfig#DEFAULT}. */
  public ConfigOrError parse(@Nullable Map<String, ?> rawConfig) {
    if (rawConfig == null || rawConfig.isEmpty()) {
      return ConfigOrError.fromConfig(WeightedPolicyConfig.DEFAULT);
    }
    WeightedPolicyConfig.Builder builder = WeightedPolicyConfig.builder();
    List<String> unknown = new ArrayList<>();
    for (Map.Entry<String, ?> entry : rawConfig.entrySet()) {
      String field = entry.getKey();
      Object value = entry.getValue();
      if (field.equals(WeightedPolicyConfig.FIELD_SUBSET_SIZE)
          || field.equals(WeightedPolicyConfig.FIELD_SUBSET_CLIENT_ID)
          || SelectionParser.reads(field)) {
        continue; // parsed together below: one needs (or excludes) the other
      }
      if (!knownFields.contains(field)) {
        unknown.add(field);
        continue;
      }
      ConfigOrError error = parseField(field, value, builder, unknown);
      if (error != null) {
        return error;
      }
    }
    if (rawConfig.containsKey(WeightedPolicyConfig.FIELD_SUBSET_SIZE)
        || rawConfig.containsKey(WeightedPolicyConfig.FIELD_SUBSET_CLIENT_ID)) {
      ConfigOrError clientSubset = ClientSubsetOption.parse(policyName, rawConfig, s -> s);
      if (clientSubset.getError() != null) {
        return clientSubset;
      }
      builder.clientSubset((ClientSubset) clientSubset.getConfig());
    }
    String selection = SelectionParser.read(rawConfig, builder, unknown);
    if (selection != null) {
      return ConfigOrError.fromError(
          Status.UNAVAILABLE.withDescription(policyName + "." + selection));
    }
    if (!unknown.isEmpty()) {
      warnOnce(rawConfig, unknown);
    }
    return ConfigOrError.fromConfig(builder.build());
  }

  /** Reads one known field into {@code builder}; returns the error naming it, or null. */
  @Nullable
  private ConfigOrError parseField(
      String field, Object value, WeightedPolicyConfig.Builder builder, List<String> unknown) {
    String problem = readField(field, value, builder, unknown);
    return problem == null ? null : error(field, problem);
  }

  /** Reads one known field into {@code builder}; returns {@code "[.sub]: what is wrong"}, or null. */
  @Nullable
  private static String readField(
      String field, Object value, WeightedPolicyConfig.Builder builder, List<String> unknown) {
    switch (field) {
      case WeightedPolicyConfig.FIELD_PANIC_THRESHOLD_PERCENT:
        if (!isWholeNumber(value)
            || ((Number) value).doubleValue() < 0
            || ((Number) value).doubleValue() > 100) {
          return ": " + value + " (expected: a whole number 0..100)";
        }
        builder.panicThresholdPercent(((Number) value).intValue());
        return null;
      case SlowStartConfig.FIELD:
        return readSlowStart(value, builder, unknown);
      case ZoneRoutingConfig.FIELD:
        return readZoneRouting(value, builder, unknown);
      case WeightedPolicyConfig.FIELD_CHOICE_COUNT:
        if (!isWholeNumber(value)
            || ((Number) value).doubleValue() < WeightedPolicyConfig.MIN_CHOICE_COUNT
            || ((Number) value).doubleValue() > WeightedPolicyConfig.MAX_CHOICE_COUNT) {
          return ": "
              + value
              + " (expected: "
              + WeightedPolicyConfig.MIN_CHOICE_COUNT
              + ".."
              + WeightedPolicyConfig.MAX_CHOICE_COUNT
              + ")";
        }
        builder.choiceCount(((Number) value).intValue());
        return null;
      case WeightedPolicyConfig.FIELD_LATENCY:
        if (!(value instanceof Boolean)) {
          return ": " + value + " (expected: true or false)";
        }
        builder.latency((Boolean) value);
        return null;
      case WeightedPolicyConfig.FIELD_DECAY:
        long nanos = parseDurationNanos(value);
        if (nanos <= 0) {
          return ": " + value + " (expected: a duration > 0s, e.g. \"1s\")";
        }
        builder.decayNanos(nanos);
        return null;
      case WeightedPolicyConfig.FIELD_ERROR_PENALTY:
        if (!(value instanceof Number)
            || !(((Number) value).doubleValue() >= 0)
            || ((Number) value).doubleValue() > WeightedPolicyConfig.MAX_ERROR_PENALTY) {
          return ": " + value + " (expected: 0.." + WeightedPolicyConfig.MAX_ERROR_PENALTY + ")";
        }
        builder.errorPenalty(((Number) value).doubleValue());
        return null;
      default:
        return null; // one of the policy's own fields: its provider reads it
    }
  }

  /**
   * Reads the {@code slowStart} object; its unknown fields go to {@code unknown} as {@code
   * slowStart.name}. Returns {@code ".field: what is wrong"} or {@code ": what is wrong"}, or null.
   */
  @Nullable
  private static String readSlowStart(
      Object raw, WeightedPolicyConfig.Builder builder, List<String> unknown) {
    if (!(raw instanceof Map)) {
      return ": " + raw + " (expected: an object with \"" + SlowStartConfig.FIELD_WINDOW + "\")";
    }
    Map<?, ?> map = (Map<?, ?>) raw;
    SelectionParser.noteUnknown(map, SlowStartConfig.FIELDS, SlowStartConfig.FIELD, unknown);
    Object window = map.get(SlowStartConfig.FIELD_WINDOW);
    long windowNanos = parseDurationNanos(window);
    if (windowNanos <= 0) {
      return "."
          + SlowStartConfig.FIELD_WINDOW
          + ": "
          + (window == null ? "missing" : window)
          + " (expected: a duration > 0s, e.g. \"30s\")";
    }
    double aggression = SlowStartConfig.DEFAULT_AGGRESSION;
    if (map.containsKey(SlowStartConfig.FIELD_AGGRESSION)) {
      Object value = map.get(SlowStartConfig.FIELD_AGGRESSION);
      if (!(value instanceof Number)
          || !(((Number) value).doubleValue() > 0)
          || ((Number) value).doubleValue() > SlowStartConfig.MAX_AGGRESSION) {
        return "."
            + SlowStartConfig.FIELD_AGGRESSION
            + ": "
            + value
            + " (expected: a number > 0 and <= "
            + SlowStartConfig.MAX_AGGRESSION
            + ")";
      }
      aggression = ((Number) value).doubleValue();
    }
    int minWeightPercent = SlowStartConfig.DEFAULT_MIN_WEIGHT_PERCENT;
    if (map.containsKey(SlowStartConfig.FIELD_MIN_WEIGHT_PERCENT)) {
      Object value = map.get(SlowStartConfig.FIELD_MIN_WEIGHT_PERCENT);
      if (!isWholeNumber(value)
          || ((Number) value).doubleValue() < 1
          || ((Number) value).doubleValue() > 100) {
        return "."
            + SlowStartConfig.FIELD_MIN_WEIGHT_PERCENT
            + ": "
            + value
            + " (expected: a whole number 1..100)";
      }
      minWeightPercent = ((Number) value).intValue();
    }
    builder.slowStart(new SlowStartConfig(windowNanos, aggression, minWeightPercent));
    return null;
  }

  /**
   * Reads the {@code zoneRouting} object; its unknown fields go to {@code unknown} as {@code
   * zoneRouting.name}. Returns {@code ".field: what is wrong"} or {@code ": what is wrong"}, or null.
   */
  @Nullable
  private static String readZoneRouting(
      Object raw, WeightedPolicyConfig.Builder builder, List<String> unknown) {
    if (!(raw instanceof Map)) {
      return ": " + raw + " (expected: an object, e.g. {\"minLocalEndpoints\": 2})";
    }
    Map<?, ?> map = (Map<?, ?>) raw;
    SelectionParser.noteUnknown(map, ZoneRoutingConfig.FIELDS, ZoneRoutingConfig.FIELD, unknown);
    ZoneRoutingConfig.Builder zoneRouting = ZoneRoutingConfig.builder();
    if (map.containsKey(ZoneRoutingConfig.FIELD_ENABLED)) {
      Object value = map.get(ZoneRoutingConfig.FIELD_ENABLED);
      if (!(value instanceof Boolean)) {
        return "." + ZoneRoutingConfig.FIELD_ENABLED + ": " + value + " (expected: true or false)";
      }
      zoneRouting.enabled((Boolean) value);
    }
    if (map.containsKey(ZoneRoutingConfig.FIELD_ZONE)) {
      Object value = map.get(ZoneRoutingConfig.FIELD_ZONE);
      if (!(value instanceof String)) {
        return "." + ZoneRoutingConfig.FIELD_ZONE + ": " + value + " (expected: a zone name)";
      }
      try {
        zoneRouting.zone((String) value);
      } catch (IllegalArgumentException e) {
        return "." + e.getMessage();
      }
    }
    if (map.containsKey(ZoneRoutingConfig.FIELD_MIN_LOCAL_ENDPOINTS)) {
      Object value = map.get(ZoneRoutingConfig.FIELD_MIN_LOCAL_ENDPOINTS);
      if (!isWholeNumber(value)
          || ((Number) value).doubleValue() < 1
          || ((Number) value).doubleValue() > ZoneRoutingConfig.MAX_MIN_LOCAL_ENDPOINTS) {
        return "."
            + ZoneRoutingConfig.FIELD_MIN_LOCAL_ENDPOINTS
            + ": "
            + value
            + " (expected: a whole number 1.."
            + ZoneRoutingConfig.MAX_MIN_LOCAL_ENDPOINTS
            + ")";
      }
      zoneRouting.minLocalEndpoints(((Number) value).intValue());
    }
    if (map.containsKey(ZoneRoutingConfig.FIELD_SPILL_LOAD)) {
      Object value = map.get(ZoneRoutingConfig.FIELD_SPILL_LOAD);
      if (!(value instanceof Number)
          || !(((Number) value).doubleValue() >= 0)
          || ((Number) value).doubleValue() > ZoneRoutingConfig.MAX_SPILL_LOAD) {
        return "."
            + ZoneRoutingConfig.FIELD_SPILL_LOAD
            + ": "
            + value
            + " (expected: 0.."
            + (long) ZoneRoutingConfig.MAX_SPILL_LOAD
            + ", 0 = off)";
      }
      zoneRouting.spillLoad(((Number) value).doubleValue());
    }
    builder.zoneRouting(zoneRouting.build());
    return null;
  }

  private void warnOnce(Map<String, ?> rawConfig, List<String> unknown) {
    // A shallow copy: the key must not change if the caller reuses its map.
    if (warned.asMap().putIfAbsent(new LinkedHashMap<>(rawConfig), Boolean.TRUE) == null) {
      log.warn(
          "{} config {}: ignoring unknown fields {} (this version reads {})",
          policyName,
          rawConfig,
          unknown,
          knownFields);
    }
  }

  static boolean isWholeNumber(Object value) {
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
  public static long parseDurationNanos(@Nullable Object value) {
    if (!(value instanceof String) || !((String) value).matches("[0-9]{1,12}(\\.[0-9]{1,9})?s")) {
      return -1;
    }
    String seconds = (String) value;
    return new BigDecimal(seconds.substring(0, seconds.length() - 1))
        .movePointRight(9)
        .longValueExact();
  }

  /** {@code problem} is {@code ": what"} or {@code ".sub: what"}. */
  private ConfigOrError error(String field, String problem) {
    return ConfigOrError.fromError(
        Status.UNAVAILABLE.withDescription(policyName + "." + field + problem));
  }
}
