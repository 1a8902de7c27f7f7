package io.steelyard.spring.cloud;

import java.time.Duration;
import javax.annotation.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code steelyard.cloud.*} properties: what the Spring Cloud integration adds to the
 * starter's {@code steelyard.etcd.*}, {@code steelyard.registration.*} (weight, ttl, metadata,
 * host, format, drain delay: shared with the gRPC registration) and {@code
 * steelyard.discovery.*} (debounce, relist interval).
 *
 * <pre>{@code
 * steelyard:
 *   cloud:
 *     registration:
 *       service: orders-http
 *     loadbalancer:
 *       slow-start:
 *         window: 30s
 * }</pre>
 */
@ConfigurationProperties(prefix = SteelyardCloudProperties.PREFIX)
public class SteelyardCloudProperties {

  /** The prefix of every property, {@value}. */
  public static final String PREFIX = "steelyard.cloud";

  private final Discovery discovery = new Discovery();
  private final Registration registration = new Registration();
  private final LoadBalancer loadbalancer = new LoadBalancer();

  public Discovery getDiscovery() {
    return discovery;
  }

  public Registration getRegistration() {
    return registration;
  }

  public LoadBalancer getLoadbalancer() {
    return loadbalancer;
  }

  /** Spring Cloud's DiscoveryClient and ReactiveDiscoveryClient over the registry. */
  public static class Discovery {
    /** Provide the DiscoveryClient and ReactiveDiscoveryClient over steelyard. */
    private boolean enabled = true;

    /** How long the first lookup of a service waits for etcd's first list of it. */
    private Duration firstListTimeout = Duration.ofSeconds(5);

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public Duration getFirstListTimeout() {
      return firstListTimeout;
    }

    public void setFirstListTimeout(Duration firstListTimeout) {
      this.firstListTimeout = firstListTimeout;
    }
  }

  /** Registration of the application's HTTP server. */
  public static class Registration {
    /** Register the application's HTTP server (also needs spring.cloud.service-registry.auto-registration.enabled). */
    private boolean enabled = true;

    /**
     * Service name of the HTTP server. Default: steelyard.registration.service, else
     * spring.application.name; with "-http" appended when the gRPC starter registers the gRPC
     * server under that same name.
     */
    @Nullable private String service;

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    @Nullable
    public String getService() {
      return service;
    }

    public void setService(@Nullable String service) {
      this.service = service;
    }
  }

  /** The weighted Spring Cloud LoadBalancer. */
  public static class LoadBalancer {
    /** Choose instances by weight in Spring Cloud LoadBalancer (instead of round robin). */
    private boolean enabled = true;

    private final SlowStart slowStart = new SlowStart();

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public SlowStart getSlowStart() {
      return slowStart;
    }
  }

  /** Slow start, as the balancer's slowStart option: off unless a window is set. */
  public static class SlowStart {
    /** How long a new or undrained instance ramps up to its weight; unset or 0 turns slow start off. */
    @Nullable private Duration window;

    /** Above 1 ramps faster early, below 1 slower; (0, 100]. */
    private double aggression = 1.0;

    /** The ramp's floor, in percent of the weight, 1..100. */
    private int minWeightPercent = 10;

    @Nullable
    public Duration getWindow() {
      return window;
    }

    public void setWindow(@Nullable Duration window) {
      this.window = window;
    }

    public double getAggression() {
      return aggression;
    }

    public void setAggression(double aggression) {
      this.aggression = aggression;
    }

    public int getMinWeightPercent() {
      return minWeightPercent;
    }

    public void setMinWeightPercent(int minWeightPercent) {
      this.minWeightPercent = minWeightPercent;
    }
  }
}
