package io.steelyard.discovery;

import static java.util.Objects.requireNonNull;

import com.google.common.collect.ImmutableList;
import io.steelyard.registry.ServiceInstance;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import javax.annotation.Nullable;

/**
 * A complete, consistent view of one service's instances as of an etcd revision.
 *
 * <p>Instances are sorted by address and unique by address (when two keys announce the same
 * address, the one with the smallest key wins). A snapshot is <em>stale</em> when the watcher
 * has lost etcd since {@link #staleSince()}: the instances are the last ones etcd confirmed, kept
 * on purpose so that callers keep working while etcd is away.
 *
 * <p>Keys whose value cannot be read are not instances; {@link #malformed()} lists them with the
 * reason, so that a tool can show them:
 *
 * <pre>{@code
 * for (Snapshot.MalformedKey m : snapshot.malformed()) {
 *   logger.warn("malformed {}: {}", Validation.quote(m.key()), m.reason());
 * }
 * }</pre>
 */
public final class Snapshot {

  /**
   * A key under the service's prefix whose current value cannot be read.
   *
   * @param key the key exactly as stored (UTF-8); it may hold any character, so quote it (e.g.
   *     with {@link io.steelyard.registry.Validation#quote}) before printing it
   * @param reason why the value was refused, already quoted for printing: one line in single
   *     quotes, control characters escaped, at most about 200 characters
   */
  public record MalformedKey(String key, String reason) {
    public MalformedKey {
      requireNonNull(key, "key");
      requireNonNull(reason, "reason");
    }
  }

  private final String service;
  private final ImmutableList<ServiceInstance> instances;
  private final ImmutableList<MalformedKey> malformed;
  private final long revision;
  @Nullable private final Instant staleSince;
  private final long changeReceivedNanos;

  /** {@link #changeReceivedNanos()} of a view that carries no new event. */
  static final long NO_CHANGE = Long.MIN_VALUE;

  Snapshot(String service, List<ServiceInstance> instances, long revision, @Nullable Instant staleSince) {
    this(service, instances, List.of(), revision, staleSince);
  }

  Snapshot(
      String service,
      List<ServiceInstance> instances,
      List<MalformedKey> malformed,
      long revision,
      @Nullable Instant staleSince) {
    this(service, instances, malformed, revision, staleSince, NO_CHANGE);
  }

  private Snapshot(
      String service,
      List<ServiceInstance> instances,
      List<MalformedKey> malformed,
      long revision,
      @Nullable Instant staleSince,
      long changeReceivedNanos) {
    this.service = requireNonNull(service, "service");
    this.instances = ImmutableList.copyOf(instances);
    this.malformed = ImmutableList.copyOf(malformed);
    this.revision = revision;
    this.staleSince = staleSince;
    this.changeReceivedNanos = changeReceivedNanos;
  }

  /**
   * A fresh view of {@code instances} at {@code revision}, as a watcher delivers one: sorted by
   * address, no malformed key, not stale. For a {@link ServiceWatcher.Listener} fed from
   * elsewhere than a watcher, and for its tests.
   */
  public static Snapshot of(String service, List<ServiceInstance> instances, long revision) {
    List<ServiceInstance> sorted = new ArrayList<>(instances);
    sorted.sort(Comparator.comparing(ServiceInstance::address));
    return new Snapshot(service, sorted, revision, null);
  }

  /**
   * This view, marked with when (on the watcher's clock) the oldest watch response it is the
   * first to include arrived; {@link #NO_CHANGE} for a view that carries no new event (a listing,
   * a staleness change). For the propagation-delay meter only: not part of {@link #equals}.
   */
  Snapshot withChangeReceivedNanos(long nanos) {
    return nanos == changeReceivedNanos
        ? this
        : new Snapshot(service, instances, malformed, revision, staleSince, nanos);
  }

  long changeReceivedNanos() {
    return changeReceivedNanos;
  }

  /** The service name. */
  public String service() {
    return service;
  }

  /** The instances, sorted by address; empty only when etcd says the service has none. */
  public List<ServiceInstance> instances() {
    return instances;
  }

  /**
   * The keys of this service currently holding a value that cannot be read, sorted by key (by
   * {@link String#compareTo}); empty when every value is good. A key leaves the list when it is
   * deleted or rewritten with a good value. The watcher warns about each one once per version and
   * counts it ({@link ServiceWatcher#malformedCount()}).
   */
  public List<MalformedKey> malformed() {
    return malformed;
  }

  /** The etcd revision this snapshot reflects (the listing's header or the last event seen). */
  public long revision() {
    return revision;
  }

  /** Whether etcd has been unreachable since this view was last confirmed. */
  public boolean isStale() {
    return staleSince != null;
  }

  /** When the watcher lost etcd, if it currently has. */
  public Optional<Instant> staleSince() {
    return Optional.ofNullable(staleSince);
  }

  /** How long the view has been stale at {@code now}; zero when it is fresh. */
  public Duration staleness(Instant now) {
    return staleSince == null || now.isBefore(staleSince)
        ? Duration.ZERO
        : Duration.between(staleSince, now);
  }

  /** Same instances as {@code other}, whatever the revision, staleness or malformed keys. */
  public boolean sameInstances(@Nullable Snapshot other) {
    return other != null && other.instances.equals(instances);
  }

  /** Same instances, malformed keys and staleness as {@code other}, whatever the revision. */
  boolean sameView(@Nullable Snapshot other) {
    return sameInstances(other)
        && other.malformed.equals(malformed)
        && Objects.equals(other.staleSince, staleSince);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Snapshot s
        && s.service.equals(service)
        && s.revision == revision
        && s.instances.equals(instances)
        && s.malformed.equals(malformed)
        && Objects.equals(s.staleSince, staleSince);
  }

  @Override
  public int hashCode() {
    return Objects.hash(service, instances, malformed, revision, staleSince);
  }

  @Override
  public String toString() {
    return "Snapshot{service=" + service + ", revision=" + revision + ", instances="
        + instances.size() + (malformed.isEmpty() ? "" : ", malformed=" + malformed.size())
        + (staleSince != null ? ", staleSince=" + staleSince : "") + "}";
  }
}
