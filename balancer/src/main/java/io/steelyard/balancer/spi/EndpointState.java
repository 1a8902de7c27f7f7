package io.steelyard.balancer.spi;

import static java.util.Objects.requireNonNull;

import com.google.common.net.HostAndPort;
import com.google.common.net.InetAddresses;
import io.grpc.ConnectivityState;
import io.grpc.Status;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.annotation.Nullable;

/**
 * One endpoint as a balancer sees it after an update: its backend label ({@code HOST:PORT}), the
 * effective weight the picker uses ({@code 0}: not eligible, e.g. drained), its connectivity
 * state and, when not READY, why: the status its pick_first child reports.
 *
 * @param backend the endpoint's first address as {@code HOST:PORT} ({@code [v6]:PORT})
 * @param effectiveWeight the weight the picker uses, 0 when the endpoint is not eligible
 * @param state the child's connectivity state
 * @param failure the child's error while TRANSIENT_FAILURE, else null
 */
public record EndpointState(
    String backend, int effectiveWeight, ConnectivityState state, @Nullable Status failure) {

  /**
   * grpc-services' health-checking wrapper says why a health check failed only in the status
   * description ("Health-check service responded SERVICE_UNKNOWN for 'svc'"); the status code is
   * UNAVAILABLE for every case. {@code BalancerMetricsTest} runs a real health server and fails the
   * day grpc changes this text.
   */
  private static final Pattern HEALTH_RESPONSE =
      Pattern.compile("Health-check service responded (\\w+) for '(.*)'");

  private static final String HEALTH_STREAM = "Health-check stream";

  public EndpointState {
    requireNonNull(backend, "backend");
    requireNonNull(state, "state");
  }

  /**
   * The label of {@code address} in meters: {@code HOST:PORT} with the IP literal ({@code
   * [v6]:PORT}), as servers register themselves; any other address type as its {@code toString}.
   */
  public static String label(@Nullable SocketAddress address) {
    if (address instanceof InetSocketAddress a) {
      String host = a.getAddress() != null ? InetAddresses.toAddrString(a.getAddress()) : a.getHostString();
      return HostAndPort.fromParts(host, a.getPort()).toString();
    }
    return String.valueOf(address);
  }

  /** Whether the endpoint is READY. */
  public boolean ready() {
    return state == ConnectivityState.READY;
  }

  /**
   * Why the endpoint is or is not READY, as a short metric tag value: {@code ready}, {@code
   * connecting}, {@code idle}, {@code health_not_serving}, {@code health_service_unknown} (any
   * health status but SERVING: {@code health_} and the status), {@code health_check_failed} (the
   * health RPC itself failed), {@code connection_refused}, {@code unavailable} (any other
   * connection failure), {@code shutdown}.
   */
  public String reason() {
    switch (state) {
      case READY:
        return "ready";
      case CONNECTING:
        return "connecting";
      case IDLE:
        return "idle";
      case SHUTDOWN:
        return "shutdown";
      default:
        break;
    }
    if (failure == null) {
      return "unavailable";
    }
    String description = failure.getDescription();
    if (description != null) {
      Matcher m = HEALTH_RESPONSE.matcher(description);
      if (m.find()) {
        return "health_" + m.group(1).toLowerCase(Locale.ROOT);
      }
      if (description.contains(HEALTH_STREAM)) {
        return "health_check_failed";
      }
    }
    for (Throwable t = failure.getCause(); t != null; t = t.getCause()) {
      if (t instanceof ConnectException) {
        return "connection_refused";
      }
    }
    return "unavailable";
  }

  /**
   * One line for people: {@code 10.0.0.7:50051 TRANSIENT_FAILURE (health check: SERVICE_UNKNOWN
   * for service 'greeter')}.
   */
  public String describe() {
    StringBuilder sb = new StringBuilder(backend).append(' ').append(state);
    if (effectiveWeight == 0) {
      sb.append(", weight 0");
    }
    if (state == ConnectivityState.TRANSIENT_FAILURE) {
      sb.append(" (").append(why()).append(')');
    }
    return sb.toString();
  }

  private String why() {
    if (failure == null) {
      return "no reason given";
    }
    String description = failure.getDescription();
    if (description != null) {
      Matcher m = HEALTH_RESPONSE.matcher(description);
      if (m.find()) {
        String service = m.group(2);
        return "health check: " + m.group(1) + " for service '" + service + "'"
            + (service.isEmpty() ? "" : "; a server with only the standard health service answers"
                + " the overall service '' alone");
      }
    }
    for (Throwable t = failure.getCause(); t != null; t = t.getCause()) {
      if (t instanceof ConnectException) {
        return "connection refused";
      }
    }
    return failure.getCode() + (description == null ? "" : ": " + description);
  }
}
