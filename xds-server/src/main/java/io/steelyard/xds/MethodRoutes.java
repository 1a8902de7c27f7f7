package io.steelyard.xds;

import com.google.protobuf.Duration;
import com.google.protobuf.UInt32Value;
import com.google.protobuf.util.Durations;
import io.envoyproxy.envoy.config.route.v3.RetryPolicy;
import io.grpc.Status;
import io.steelyard.xds.MappedConfig.MethodRule;
import java.text.ParseException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.StringJoiner;
import javax.annotation.Nullable;

/**
 * A service config's {@code methodConfig} as routes: each entry's {@code timeout} becomes the
 * route's {@code max_stream_duration} and its {@code retryPolicy} the route's {@code
 * retry_policy}, one route per name the entry gives: {@code {service, method}} matches the path
 * {@code /service/method}, {@code {service}} the prefix {@code /service/}, {@code {}} every call.
 *
 * <p><b>Timeout (gRFC A31).</b> gRPC clients read {@code max_stream_duration}'s {@code
 * grpc_timeout_header_max} when set, else its {@code max_stream_duration}, and use the smaller of
 * it and the call's own deadline: the service config's rule. Both are set, to the same value;
 * {@code RouteAction.timeout} is ignored by gRPC clients and is not sent.
 *
 * <p><b>Retry (gRFC A44).</b> {@code maxAttempts} − 1 retries, {@code initialBackoff} and {@code
 * maxBackoff} as the back-off's base and max intervals, and the retryable codes gRPC clients
 * accept in {@code retry_on} ({@link #RETRYABLE}). xDS has no back-off multiplier (clients use
 * 2), so another multiplier, another code and {@code perAttemptRecvTimeout} are left out and
 * named; so is every other method setting ({@code waitForReady}, message size limits, {@code
 * hedgingPolicy}).
 *
 * <p>The JSON read here is what grpc's parser has just accepted: it only picks values out.
 */
final class MethodRoutes {

  /** The codes gRPC clients retry on from {@code retry_on} (gRFC A44); others they skip. */
  static final Set<Status.Code> RETRYABLE = EnumSet.of(Status.Code.CANCELLED, Status.Code.DEADLINE_EXCEEDED,
      Status.Code.INTERNAL, Status.Code.RESOURCE_EXHAUSTED, Status.Code.UNAVAILABLE);
  private static final Set<String> RETRY_MAPPED = Set.of("maxAttempts", "initialBackoff", "maxBackoff",
      "backoffMultiplier", "retryableStatusCodes");

  private MethodRoutes() {}

  /** Adds the rules of {@code methodConfig} to {@code rules}, and what it maps and leaves out. */
  @SuppressWarnings("unchecked")
  static void map(List<?> methodConfig, List<MethodRule> rules, List<String> served, List<String> leftOut) {
    for (int i = 0; i < methodConfig.size(); i++) {
      Map<String, ?> entry = (Map<String, ?>) methodConfig.get(i);
      String where = "methodConfig[" + i + "]";
      Duration timeout = null;
      RetryPolicy retry = null;
      for (Map.Entry<String, ?> field : entry.entrySet()) {
        switch (field.getKey()) {
          case "name" -> { }
          case "timeout" -> timeout = duration(field.getValue());
          case "retryPolicy" -> retry = retry((Map<String, ?>) field.getValue(), where + ".retryPolicy", leftOut);
          default -> leftOut.add(where + "." + field.getKey());
        }
      }
      if (timeout != null && Durations.toNanos(timeout) == 0) {
        timeout = null;
      }
      if (timeout == null && retry == null) {
        continue;
      }
      List<String> paths = new ArrayList<>();
      for (Object n : (List<?>) (entry.get("name") == null ? List.of() : entry.get("name"))) {
        Map<String, ?> name = (Map<String, ?>) n;
        String service = (String) name.get("service");
        String method = (String) name.get("method");
        MethodRule rule = service == null || service.isEmpty()
            ? new MethodRule("", true, timeout, retry)
            : method == null || method.isEmpty()
                ? new MethodRule("/" + service + "/", true, timeout, retry)
                : new MethodRule("/" + service + "/" + method, false, timeout, retry);
        rules.add(rule);
        paths.add(rule.path().isEmpty() ? "every call" : rule.path() + (rule.prefix() ? "*" : ""));
      }
      served.add(where + " " + String.join(", ", paths) + ": route"
          + (timeout == null ? "" : " max_stream_duration " + Durations.toString(timeout))
          + (retry == null ? "" : " retry_policy " + retry.getRetryOn() + " x" + retry.getNumRetries().getValue()));
    }
  }

  /** The rules in match order: exact methods, then service prefixes, then the default. */
  static List<MethodRule> ordered(List<MethodRule> rules) {
    List<MethodRule> out = new ArrayList<>(rules);
    out.sort(Comparator.comparingInt(r -> r.path().isEmpty() ? 2 : r.prefix() ? 1 : 0));
    return out;
  }

  @SuppressWarnings("unchecked")
  @Nullable
  private static RetryPolicy retry(Map<String, ?> policy, String where, List<String> leftOut) {
    RetryPolicy.Builder retry = RetryPolicy.newBuilder();
    int maxAttempts = ((Number) policy.get("maxAttempts")).intValue();
    // C-core refuses a route whose num_retries is 0; one attempt is no retry policy at all.
    retry.setNumRetries(UInt32Value.of(Math.max(1, maxAttempts - 1)));
    RetryPolicy.RetryBackOff.Builder backOff = RetryPolicy.RetryBackOff.newBuilder()
        .setBaseInterval(duration(policy.get("initialBackoff")));
    if (policy.get("maxBackoff") != null) {
      backOff.setMaxInterval(duration(policy.get("maxBackoff")));
    }
    retry.setRetryBackOff(backOff);
    Object multiplier = policy.get("backoffMultiplier");
    if (multiplier instanceof Number m && m.doubleValue() != 2.0) {
      leftOut.add(where + ".backoffMultiplier " + m + " (xDS clients back off by 2)");
    }
    StringJoiner retryOn = new StringJoiner(",");
    for (Object c : (List<?>) (policy.get("retryableStatusCodes") == null ? List.of() : policy.get("retryableStatusCodes"))) {
      Status.Code code = c instanceof Number n
          ? Status.fromCodeValue(n.intValue()).getCode()
          : Status.Code.valueOf(((String) c).toUpperCase(Locale.ROOT));
      if (RETRYABLE.contains(code)) {
        retryOn.add(code.name().toLowerCase(Locale.ROOT).replace('_', '-'));
      } else {
        leftOut.add(where + ".retryableStatusCodes " + code + " (xDS clients retry only "
            + RETRYABLE + ")");
      }
    }
    for (String field : policy.keySet()) {
      if (!RETRY_MAPPED.contains(field)) {
        leftOut.add(where + "." + field);
      }
    }
    if (retryOn.length() == 0) {
      leftOut.add(where + " (none of its codes can be retried by xDS clients)");
      return null;
    }
    return retry.setRetryOn(retryOn.toString()).build();
  }

  /** A duration grpc has accepted ({@code "1.5s"}, protobuf's JSON form). */
  static Duration duration(Object value) {
    try {
      return Durations.parse((String) value);
    } catch (ParseException e) {
      throw new IllegalArgumentException("duration: " + value + " (expected: e.g. 0.2s)", e);
    }
  }
}
