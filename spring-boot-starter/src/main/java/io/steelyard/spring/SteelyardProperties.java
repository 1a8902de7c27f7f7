package io.steelyard.spring;

import io.steelyard.agent.AdvertisedAddress;
import io.steelyard.agent.ServiceRegistration;
import io.steelyard.agent.ShutdownSequence;
import io.steelyard.discovery.ServiceWatcher;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.Validation;
import io.steelyard.registry.ValueFormat;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.annotation.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code steelyard.*} properties. Every one is optional: with none set, an application
 * registers its Spring gRPC server as {@code spring.application.name} in the etcd at {@code
 * STEELYARD_ETCD_ENDPOINTS} (Spring's relaxed binding reads that environment variable as {@code
 * steelyard.etcd.endpoints}) or {@value EtcdConnection#DEFAULT_ENDPOINTS}, and its {@code
 * etcd:///NAME} channels resolve from the same etcd.
 *
 * <pre>{@code
 * steelyard:
 *   etcd:
 *     endpoints: https://etcd-1:2379,https://etcd-2:2379
 *     user: greeter
 *     password: ${ETCD_PASSWORD}
 *     ca-cert: /etc/steelyard/ca.pem
 *   registration:
 *     weight: 5
 *     zone: eu-west-1a
 *     metadata:
 *       version: "2"
 *   discovery:
 *     zone: eu-west-1a        # this application's calls stay in its zone
 * }</pre>
 *
 * <p>Values are checked when the beans are made, by the same rules as the rest of steelyard; a bad
 * one fails the startup with a message naming the property (see {@code docs/spring-boot.md}).
 */
@ConfigurationProperties(prefix = SteelyardProperties.PREFIX)
public class SteelyardProperties {

  /** The prefix of every property, {@value}. */
  public static final String PREFIX = "steelyard";

  private final Etcd etcd = new Etcd();
  private final Registration registration = new Registration();
  private final Discovery discovery = new Discovery();

  public Etcd getEtcd() {
    return etcd;
  }

  public Registration getRegistration() {
    return registration;
  }

  public Discovery getDiscovery() {
    return discovery;
  }

  /** How to reach etcd, and where the keys live. */
  public static class Etcd {
    /**
     * Comma-separated etcd endpoints, http(s)://host:port (a bare host:port means http). Default:
     * the environment variable STEELYARD_ETCD_ENDPOINTS, else http://127.0.0.1:2379.
     */
    private String endpoints = EtcdConnection.DEFAULT_ENDPOINTS;

    /** etcd user name; requires a password. */
    @Nullable private String user;

    /** etcd password of the user. */
    @Nullable private String password;

    /** CA certificate (PEM file) to trust for TLS to etcd; turns TLS on. */
    @Nullable private String caCert;

    /** Client certificate (PEM file) for mutual TLS; requires key and ca-cert. */
    @Nullable private String cert;

    /** Private key (PEM file) of the client certificate. */
    @Nullable private String key;

    /** Bound on connecting to etcd. */
    private Duration connectTimeout = Duration.ofMillis(EtcdConnection.DEFAULT_CONNECT_TIMEOUT_MILLIS);

    /** Key prefix: instances live under PREFIX/SERVICE/ADDRESS. */
    private String prefix = KeyLayout.DEFAULT_PREFIX;

    public String getEndpoints() {
      return endpoints;
    }

    public void setEndpoints(String endpoints) {
      this.endpoints = endpoints;
    }

    @Nullable
    public String getUser() {
      return user;
    }

    public void setUser(@Nullable String user) {
      this.user = user;
    }

    @Nullable
    public String getPassword() {
      return password;
    }

    public void setPassword(@Nullable String password) {
      this.password = password;
    }

    @Nullable
    public String getCaCert() {
      return caCert;
    }

    public void setCaCert(@Nullable String caCert) {
      this.caCert = caCert;
    }

    @Nullable
    public String getCert() {
      return cert;
    }

    public void setCert(@Nullable String cert) {
      this.cert = cert;
    }

    @Nullable
    public String getKey() {
      return key;
    }

    public void setKey(@Nullable String key) {
      this.key = key;
    }

    public Duration getConnectTimeout() {
      return connectTimeout;
    }

    public void setConnectTimeout(Duration connectTimeout) {
      this.connectTimeout = connectTimeout;
    }

    public String getPrefix() {
      return prefix;
    }

    public void setPrefix(String prefix) {
      this.prefix = prefix;
    }
  }

  /** The registration of this application's Spring gRPC server. */
  public static class Registration {
    /**
     * Default of {@code steelyard.registration.await-on-startup}, {@value} s: as long as etcd's
     * default connect timeout, well past the few milliseconds a reachable etcd takes to grant a
     * lease and write the key.
     */
    public static final long DEFAULT_AWAIT_ON_STARTUP_SECONDS = 5;

    /** Whether to register the Spring gRPC server in etcd. */
    private boolean enabled = true;

    /** Service name to register as. Default: spring.application.name. */
    @Nullable private String service;

    /**
     * Address to register, host:port or [ipv6]:port, when clients must use another one than the
     * server's (NAT, port mapping). Default: host and the port the server listens on.
     */
    @Nullable private String address;

    /**
     * Host part of the registered address. Default: the value of host-variable, else the address
     * the gRPC server is bound to, or, when it listens on all interfaces, this machine's first
     * site-local address (the agent's AdvertisedAddress rule).
     */
    @Nullable private String host;

    /**
     * Environment variable holding the host to register when neither address nor host is set;
     * in Kubernetes, the pod IP from the downward API.
     */
    private String hostVariable = AdvertisedAddress.DEFAULT_HOST_VARIABLE;

    /** Weight, 0..1000000; 0 registers drained (connected, no new calls). */
    private int weight = Validation.DEFAULT_WEIGHT;

    /** Lease TTL (at least 2s): how long the key outlives a crashed server. */
    private Duration ttl = Duration.ofSeconds(ServiceRegistration.DEFAULT_TTL_SECONDS);

    /**
     * Value format: pipe (address|weight), json (etcd naming, Go-compatible; the default when
     * metadata is given) or plain (address only, weight 1, no metadata).
     */
    @Nullable private ValueFormat format;

    /** Metadata written with the value (zone, version, ...); switches the format to json. */
    private final Map<String, String> metadata = new LinkedHashMap<>();

    /**
     * Zone this server runs in, e.g. eu-west-1a: written as metadata zone (json format), read by
     * zone-aware callers and the xDS server.
     */
    @Nullable private String zone;

    /** Region this server runs in, e.g. eu-west-1: written as metadata region (json format). */
    @Nullable private String region;

    @Nullable
    public String getZone() {
      return zone;
    }

    public void setZone(@Nullable String zone) {
      this.zone = zone;
    }

    @Nullable
    public String getRegion() {
      return region;
    }

    public void setRegion(@Nullable String region) {
      this.region = region;
    }

    /**
     * Wait between deregistering and letting the gRPC server refuse new calls, so clients stop
     * picking this instance first.
     */
    private Duration drainDelay = Duration.ofMillis(ShutdownSequence.DEFAULT_DRAIN_DELAY_MILLIS);

    /**
     * How long startup waits for this server's key to be in etcd before the application's runners
     * run and it reports ready; startup fails with the reason when the key is not there in time.
     * 0 starts without waiting (the key follows in the background).
     */
    private Duration awaitOnStartup = Duration.ofSeconds(DEFAULT_AWAIT_ON_STARTUP_SECONDS);

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

    @Nullable
    public String getAddress() {
      return address;
    }

    public void setAddress(@Nullable String address) {
      this.address = address;
    }

    @Nullable
    public String getHost() {
      return host;
    }

    public void setHost(@Nullable String host) {
      this.host = host;
    }

    public String getHostVariable() {
      return hostVariable;
    }

    public void setHostVariable(String hostVariable) {
      this.hostVariable = hostVariable;
    }

    public int getWeight() {
      return weight;
    }

    public void setWeight(int weight) {
      this.weight = weight;
    }

    public Duration getTtl() {
      return ttl;
    }

    public void setTtl(Duration ttl) {
      this.ttl = ttl;
    }

    @Nullable
    public ValueFormat getFormat() {
      return format;
    }

    public void setFormat(@Nullable ValueFormat format) {
      this.format = format;
    }

    public Map<String, String> getMetadata() {
      return metadata;
    }

    public Duration getDrainDelay() {
      return drainDelay;
    }

    public void setDrainDelay(Duration drainDelay) {
      this.drainDelay = drainDelay;
    }

    public Duration getAwaitOnStartup() {
      return awaitOnStartup;
    }

    public void setAwaitOnStartup(Duration awaitOnStartup) {
      this.awaitOnStartup = awaitOnStartup;
    }
  }

  /** How etcd:/// channels resolve. */
  public static class Discovery {
    /** Whether etcd:/// channels of Spring gRPC resolve through this configuration. */
    private boolean enabled = true;

    /** Coalescing window of instance changes (0..1s); 0 publishes every change. */
    private Duration debounce = Duration.ofMillis(ServiceWatcher.DEFAULT_DEBOUNCE_MILLIS);

    /** Interval of the safety-net full re-list of a watched service. */
    private Duration relistInterval = Duration.ofMinutes(ServiceWatcher.DEFAULT_RELIST_INTERVAL_MINUTES);

    /**
     * This application's zone as a caller: its calls stay in the zone while the zone's servers
     * carry them (zone-aware routing). Default: STEELYARD_ZONE, else zone-blind.
     */
    @Nullable private String zone;

    @Nullable
    public String getZone() {
      return zone;
    }

    public void setZone(@Nullable String zone) {
      this.zone = zone;
    }

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public Duration getDebounce() {
      return debounce;
    }

    public void setDebounce(Duration debounce) {
      this.debounce = debounce;
    }

    public Duration getRelistInterval() {
      return relistInterval;
    }

    public void setRelistInterval(Duration relistInterval) {
      this.relistInterval = relistInterval;
    }
  }
}
