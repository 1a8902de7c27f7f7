package io.steelyard.agent;

import static com.google.common.base.Preconditions.checkArgument;
import static com.google.common.base.Preconditions.checkState;
import static java.util.Objects.requireNonNull;

import com.google.common.annotations.VisibleForTesting;
import com.google.common.base.Ticker;
import io.etcd.jetcd.Client;
import io.grpc.Server;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.Localities;
import io.steelyard.registry.ServiceInstance;
import io.steelyard.registry.Validation;
import io.steelyard.registry.ValueCodec;
import io.steelyard.registry.ValueFormat;
import io.steelyard.registry.internal.RenewableClient;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import javax.annotation.Nullable;

/**
 * Builds a {@link ServiceRegistration}; start from {@link ServiceRegistration#builder(EtcdConnection,
 * String, String)}, {@link ServiceRegistration#builder(Client, String, String)} or {@link
 * ServiceRegistration#builder(SharedLease, String, String)}, or from their two-argument forms and
 * name the address with exactly one of {@link #address}, {@link #port} and {@link #server} (the
 * last two find the host by {@link AdvertisedAddress}'s rule). Every setting is checked when set,
 * and {@link #build()} throws {@link IllegalArgumentException} naming a bad value or combination.
 * A setting given twice throws {@link IllegalStateException} ({@code "weight already set"});
 * {@link #listener} adds one more listener each call.
 *
 * <pre>{@code
 * ServiceRegistration reg = ServiceRegistration.builder(etcd, "greeter", "10.0.0.7:50051")
 *     .weight(5)
 *     .ttl(Duration.ofSeconds(10))
 *     .metadata(Map.of("zone", "eu-1"))   // written as etcd-naming JSON
 *     .build();
 * // the host from $STEELYARD_ADVERTISE_HOST, else this machine's site-local address
 * ServiceRegistration.builder(etcd, "greeter").server(server).build();
 * }</pre>
 */
public final class ServiceRegistrationBuilder {

  @Nullable private final EtcdConnection etcd;
  @Nullable private final Client client;
  @Nullable private final SharedLease sharedLease;
  // Read by RegistrationStateMachine when built.
  final String service;
  @Nullable String address; // known when build() returns
  @Nullable private AddressFrom addressFrom;
  private int port;
  @Nullable private Server server;
  @Nullable private String hostVariable;
  private AdvertisedAddress addressRule = AdvertisedAddress.fromEnvironment();
  int weight = Validation.DEFAULT_WEIGHT;
  long ttlSeconds = RegistrationDefaults.TTL_SECONDS;
  private boolean ttlSet;
  @Nullable private ValueFormat format;
  Map<String, String> metadata = Map.of();
  @Nullable private String zone;
  @Nullable private String region;
  KeyLayout layout = KeyLayout.defaults();
  final List<RegistrationListener> listeners = new ArrayList<>();
  Duration operationTimeout =
      Duration.ofMillis(RegistrationDefaults.OPERATION_TIMEOUT_MILLIS);
  Duration closeTimeout = Duration.ofMillis(RegistrationDefaults.CLOSE_TIMEOUT_MILLIS);
  Duration retryInitialDelay =
      Duration.ofMillis(RegistrationDefaults.RETRY_INITIAL_DELAY_MILLIS);
  Duration retryMaxDelay = Duration.ofMillis(RegistrationDefaults.RETRY_MAX_DELAY_MILLIS);
  Random random = new SecureRandom();
  ScheduledExecutorService scheduler = RegistrationScheduler.shared();
  Ticker ticker = Ticker.systemTicker();
  @Nullable WeightSource weightSource;
  private Duration weightSampleInterval =
      Duration.ofMillis(WeightSource.DEFAULT_SAMPLE_INTERVAL_MILLIS);
  private Duration weightMinWriteInterval =
      Duration.ofMillis(WeightSource.DEFAULT_MIN_WRITE_INTERVAL_MILLIS);
  private double weightMinRelativeChange = WeightSource.DEFAULT_MIN_RELATIVE_CHANGE;
  private int weightMinAbsoluteChange = WeightSource.DEFAULT_MIN_ABSOLUTE_CHANGE;

  /** The settings given so far, each at most once. */
  private final Set<String> given = new HashSet<>();

  ServiceRegistrationBuilder(
      @Nullable EtcdConnection etcd,
      @Nullable Client client,
      @Nullable SharedLease sharedLease,
      String service,
      @Nullable String address) {
    this.etcd = etcd;
    this.client = client;
    this.sharedLease = sharedLease;
    this.service = Validation.checkServiceName(service);
    if (address != null) {
      address(address);
    }
  }

  /** The project's rule for builders: a setting given twice is a mistake, refused at once. */
  private void once(String setting) {
    checkState(given.add(setting), "%s already set", setting);
  }

  /**
   * The {@code host:port} (or {@code [ipv6]:port}) to register, as clients reach it; given to
   * the three-argument {@code builder(...)} already.
   */
  public ServiceRegistrationBuilder address(String address) {
    addressGivenBy(AddressFrom.ADDRESS);
    this.address = Validation.checkAddress(address);
    return this;
  }

  /**
   * Registers {@code port} with the host {@link AdvertisedAddress} finds: {@code
   * $STEELYARD_ADVERTISE_HOST} (see {@link #hostVariable}), else this machine's first site-local
   * address. For a server that listens on {@code port} on every address.
   */
  public ServiceRegistrationBuilder port(int port) {
    checkArgument(port >= 1 && port <= 65535, "port: %s (expected: 1..65535)", port);
    addressGivenBy(AddressFrom.PORT);
    this.port = port;
    return this;
  }

  /**
   * Registers the port {@code server} listens on, with the host {@link AdvertisedAddress} finds
   * (the bound address when the server is bound to one). The server must be started before
   * {@link #build()}; for one that is not, give {@link #port}.
   */
  public ServiceRegistrationBuilder server(Server server) {
    addressGivenBy(AddressFrom.SERVER);
    this.server = requireNonNull(server, "server");
    return this;
  }

  /**
   * The environment variable whose value is the host for {@link #port} and {@link #server};
   * default {@value AdvertisedAddress#DEFAULT_HOST_VARIABLE}. E.g. {@code "POD_IP"}.
   */
  public ServiceRegistrationBuilder hostVariable(String variable) {
    once("hostVariable");
    addressRule.withHostVariable(variable); // checks the name now
    this.hostVariable = variable;
    return this;
  }

  /** Replaces the environment and interfaces the host is found in: a test's. */
  @VisibleForTesting
  ServiceRegistrationBuilder addressRule(AdvertisedAddress rule) {
    this.addressRule = requireNonNull(rule, "rule");
    return this;
  }

  /** The setting that named the address: one of them, once. */
  private enum AddressFrom {
    ADDRESS, PORT, SERVER;

    @Override
    public String toString() {
      return name().toLowerCase(Locale.ROOT) + "(...)";
    }
  }

  private void addressGivenBy(AddressFrom from) {
    checkState(addressFrom == null, "address already set (by %s)", addressFrom);
    addressFrom = from;
  }

  private String resolveAddress() {
    checkArgument(
        addressFrom != null, "address: none (expected: one of address(...), port(...) or server(...))");
    checkArgument(
        hostVariable == null || addressFrom != AddressFrom.ADDRESS,
        "hostVariable: %s (expected: unset with an explicit address)", Validation.quote(hostVariable));
    AdvertisedAddress rule = hostVariable == null ? addressRule : addressRule.withHostVariable(hostVariable);
    return switch (addressFrom) {
      case PORT -> rule.of(port);
      case SERVER -> rule.of(requireNonNull(server));
      case ADDRESS -> requireNonNull(address);
    };
  }

  /** The weight, {@code 0..1000000}; default {@value Validation#DEFAULT_WEIGHT}. */
  public ServiceRegistrationBuilder weight(int weight) {
    once("weight");
    this.weight = Validation.checkWeight(weight);
    return this;
  }

  /**
   * The lease TTL, whole seconds (a fraction is rounded up), at least {@value
   * ServiceRegistration#MIN_TTL_SECONDS} s; default {@value
   * ServiceRegistration#DEFAULT_TTL_SECONDS} s. The key outlives a crashed server by at most this
   * long.
   */
  public ServiceRegistrationBuilder ttl(Duration ttl) {
    once("ttl");
    this.ttlSeconds = ttlSecondsOf(ttl);
    this.ttlSet = true;
    return this;
  }

  /** Whole seconds of a TTL, rounded up; the one check of a TTL (registrations, shared leases). */
  static long ttlSecondsOf(Duration ttl) {
    requireNonNull(ttl, "ttl");
    checkArgument(
        ttl.compareTo(Duration.ofSeconds(RegistrationDefaults.MIN_TTL_SECONDS)) >= 0,
        "ttl: %s (expected: >= %ss)", ttl, RegistrationDefaults.MIN_TTL_SECONDS);
    long s = ttl.getSeconds() + (ttl.getNano() > 0 ? 1 : 0);
    checkArgument(s <= Integer.MAX_VALUE, "ttl: %s (expected: <= %ss)", ttl, Integer.MAX_VALUE);
    return s;
  }

  /** Like {@link #ttl(Duration)}, in seconds. */
  public ServiceRegistrationBuilder ttlSeconds(long seconds) {
    checkArgument(
        seconds >= RegistrationDefaults.MIN_TTL_SECONDS,
        "ttl: %ss (expected: >= %ss)", seconds, RegistrationDefaults.MIN_TTL_SECONDS);
    return ttl(Duration.ofSeconds(seconds));
  }

  /**
   * The value format: {@link ValueFormat#PIPE} by default, {@link ValueFormat#JSON} (etcd naming,
   * Go-compatible) when metadata is given. {@link ValueFormat#PLAIN} carries neither weight nor
   * metadata, so it is accepted only with weight 1 and no metadata.
   */
  public ServiceRegistrationBuilder format(ValueFormat format) {
    once("format");
    this.format = requireNonNull(format, "format");
    return this;
  }

  /** Metadata (zone, version, ...), written only in the JSON format; may not contain "weight". */
  public ServiceRegistrationBuilder metadata(Map<String, String> metadata) {
    once("metadata");
    requireNonNull(metadata, "metadata");
    this.metadata = Map.copyOf(metadata);
    return this;
  }

  /**
   * The zone this server runs in, e.g. {@code eu-west-1a}: the metadata key {@value
   * Localities#ZONE_KEY} (so the JSON format), which zone-aware callers and the xDS server read
   * ({@code docs/localities.md}). Not together with a {@code zone} key in {@link #metadata}.
   */
  public ServiceRegistrationBuilder zone(String zone) {
    once("zone");
    this.zone = Localities.checkName("zone", zone);
    return this;
  }

  /** The region this server runs in, e.g. {@code eu-west-1}: metadata key {@value Localities#REGION_KEY}. */
  public ServiceRegistrationBuilder region(String region) {
    once("region");
    this.region = Localities.checkName("region", region);
    return this;
  }

  /** The key layout; default {@link KeyLayout#defaults()} (prefix {@code /services}). */
  public ServiceRegistrationBuilder keyLayout(KeyLayout layout) {
    once("keyLayout");
    this.layout = requireNonNull(layout, "layout");
    return this;
  }

  /** Adds a listener; see {@link RegistrationListener} for when and where it runs. */
  public ServiceRegistrationBuilder listener(RegistrationListener listener) {
    listeners.add(requireNonNull(listener, "listener"));
    return this;
  }

  /**
   * Bound on each etcd call (grant, put, revoke, ...) and on a weight update as a whole; default
   * {@value ServiceRegistration#DEFAULT_OPERATION_TIMEOUT_MILLIS} ms.
   */
  public ServiceRegistrationBuilder operationTimeout(Duration timeout) {
    once("operationTimeout");
    this.operationTimeout = positive(timeout, "operationTimeout");
    return this;
  }

  /**
   * Bound on {@link ServiceRegistration#close()}; default {@value
   * ServiceRegistration#DEFAULT_CLOSE_TIMEOUT_MILLIS} ms.
   */
  public ServiceRegistrationBuilder closeTimeout(Duration timeout) {
    once("closeTimeout");
    this.closeTimeout = positive(timeout, "closeTimeout");
    return this;
  }

  /**
   * Backoff between registration attempts: {@code initial} doubling up to {@code max}, each
   * scaled by a random factor in [0.8, 1.2]; defaults {@value
   * ServiceRegistration#DEFAULT_RETRY_INITIAL_DELAY_MILLIS} ms and {@value
   * ServiceRegistration#DEFAULT_RETRY_MAX_DELAY_MILLIS} ms. A refusal (permission, credentials,
   * TLS, a limit) waits {@code max} at once.
   */
  public ServiceRegistrationBuilder retryBackoff(Duration initial, Duration max) {
    once("retryBackoff");
    positive(initial, "retryInitialDelay");
    positive(max, "retryMaxDelay");
    checkArgument(
        max.compareTo(initial) >= 0, "retryMaxDelay: %s (expected: >= %s)", max, initial);
    this.retryInitialDelay = initial;
    this.retryMaxDelay = max;
    return this;
  }

  /**
   * Takes the weight from {@code source} instead of a fixed number: sampled at start (the first
   * registration writes that sample; {@link #weight(int)} only if it fails) and then every sample
   * interval, and published through the same lease-keeping, revision-guarded update as {@link
   * ServiceRegistration#setWeight}, with hysteresis ({@link #weightHysteresis}) and a rate limit
   * ({@link #weightSampling}). An operator's weight in etcd ({@code steelyard weight set}, {@code
   * drain}) and {@link ServiceRegistration#setWeight} pause the source until the source's last
   * weight is restored ({@code steelyard undrain}) or {@link
   * ServiceRegistration#resumeWeightSource()} is called. See docs/agent.md, "Weight source".
   */
  public ServiceRegistrationBuilder weightSource(WeightSource source) {
    once("weightSource");
    this.weightSource = requireNonNull(source, "source");
    return this;
  }

  /**
   * How often the weight source is sampled (default {@value
   * WeightSource#DEFAULT_SAMPLE_INTERVAL_MILLIS} ms) and the least time between two weight writes
   * it makes (default {@value WeightSource#DEFAULT_MIN_WRITE_INTERVAL_MILLIS} ms): a change
   * inside that interval waits for the first sample after it.
   */
  public ServiceRegistrationBuilder weightSampling(Duration sampleInterval, Duration minWriteInterval) {
    once("weightSampling");
    this.weightSampleInterval = positive(sampleInterval, "sampleInterval");
    this.weightMinWriteInterval = positive(minWriteInterval, "minWriteInterval");
    return this;
  }

  /**
   * The least change of the weight source that is published: at least {@code minAbsolute} and at
   * least {@code minRelative} of the current weight, both (defaults {@value
   * WeightSource#DEFAULT_MIN_RELATIVE_CHANGE} and {@value WeightSource#DEFAULT_MIN_ABSOLUTE_CHANGE}).
   * A change to or from 0 is always published.
   */
  public ServiceRegistrationBuilder weightHysteresis(double minRelative, int minAbsolute) {
    once("weightHysteresis");
    checkArgument(
        minRelative >= 0 && minRelative <= 1, "minRelative: %s (expected: 0..1)", minRelative);
    checkArgument(minAbsolute >= 0, "minAbsolute: %s (expected: >= 0)", minAbsolute);
    this.weightMinRelativeChange = minRelative;
    this.weightMinAbsoluteChange = minAbsolute;
    return this;
  }

  WeightPublisher.Settings weightSettings() {
    return new WeightPublisher.Settings(
        weightSampleInterval.toNanos(),
        weightMinWriteInterval.toNanos(),
        weightMinRelativeChange,
        weightMinAbsoluteChange);
  }

  @VisibleForTesting
  ServiceRegistrationBuilder random(Random random) {
    once("random");
    this.random = requireNonNull(random, "random");
    return this;
  }

  /**
   * Runs the registration's work, timers and etcd-call timeouts on {@code scheduler} (instead of
   * the one every registration of the JVM shares) and reads time from {@code ticker}: a fake
   * clock in tests.
   */
  @VisibleForTesting
  ServiceRegistrationBuilder scheduler(ScheduledExecutorService scheduler, Ticker ticker) {
    once("scheduler");
    this.scheduler = requireNonNull(scheduler, "scheduler");
    this.ticker = requireNonNull(ticker, "ticker");
    return this;
  }

  ValueFormat effectiveFormat() {
    if (format != null) {
      return format;
    }
    return metadata.isEmpty() ? ValueFormat.PIPE : ValueFormat.JSON;
  }

  /**
   * Checks the settings together and builds the registration (which does nothing until {@link
   * ServiceRegistration#start()}).
   *
   * @throws IllegalArgumentException naming the offending value
   */
  public ServiceRegistration build() {
    this.address = resolveAddress();
    metadata = Localities.withLocality(metadata, zone, region);
    // Validates metadata and that the format can carry weight and metadata.
    ValueCodec.encode(new ServiceInstance(service, address, weight, metadata), effectiveFormat());
    layout.instanceKey(service, address);
    if (weightSource != null && effectiveFormat() == ValueFormat.PLAIN) {
      throw new IllegalArgumentException(
          "format: PLAIN (expected: PIPE or JSON with a weight source: PLAIN carries no weight)");
    }
    if (sharedLease != null) {
      checkArgument(
          !ttlSet || ttlSeconds == sharedLease.ttlSeconds(),
          "ttl: %ss (expected: unset, or the shared lease's %ss)", ttlSeconds, sharedLease.ttlSeconds());
      checkState(!sharedLease.isClosed(), "%s is closed", sharedLease);
      this.ttlSeconds = sharedLease.ttlSeconds();
      return new ServiceRegistration(this, sharedLease.share(), false);
    }
    RenewableClient clients =
        client != null
            ? RenewableClient.borrowed(client)
            : RenewableClient.owned(
                requireNonNull(etcd), RegistrationDefaults.RENEW_CLIENT_MIN_INTERVAL, ticker);
    LeaseShare own =
        new LeaseShare(
            service + " at " + address, clients, ttlSeconds, operationTimeout, scheduler, ticker,
            random);
    return new ServiceRegistration(this, own, true);
  }

  static Duration positive(Duration d, String name) {
    requireNonNull(d, name);
    checkArgument(!d.isNegative() && !d.isZero(), "%s: %s (expected: > 0)", name, d);
    return d;
  }
}
