package io.steelyard.discovery;

import static java.util.Objects.requireNonNull;

import com.google.common.collect.ImmutableList;
import io.steelyard.registry.ServiceInstance;
import java.time.Duration;
import java.time.Instant;
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
 */
public final class Snapshot {

  private final String service;
  private final ImmutableList<ServiceInstance> instances;
  private final long revision;
  @Nullable private final Instant staleSince;

  Snapshot(String service, List<ServiceInstance> instances, long revision, @Nullable Instant staleSince) {
    this.service = requireNonNull(service, "service");
    this.instances = ImmutableList.copyOf(instances);
    this.revision = revision;
    this.staleSince = staleSince;
  }

  /** The service name. */
  public String service() {
    return service;
  }

  /** The instances, sorted by address; empty only when etcd says the service has none. */
  public List<ServiceInstance> instances() {
    return instances;
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

  /** Same instances as {@code other}, whatever the revision or staleness. */
  public boolean sameInstances(@Nullable Snapshot other) {
    return other != null && other.instances.equals(instances);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Snapshot s
        && s.service.equals(service)
        && s.revision == revision
        && s.instances.equals(instances)
        && Objects.equals(s.staleSince, staleSince);
  }

  @Override
  public int hashCode() {
    return Objects.hash(service, instances, revision, staleSince);
  }

  @Override
  public String toString() {
    return "Snapshot{service=" + service + ", revision=" + revision + ", instances="
        + instances.size() + (staleSince != null ? ", staleSince=" + staleSince : "") + "}";
  }
}
