package io.steelyard.testkit;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * What a cluster's members say about themselves over HTTP: which one leads, whether every running
 * member is healthy, and each member's state in one line for a failure message.
 *
 * <p>A member that reports itself as leader is the leader; followers may still name a dead one.
 * Stateless; thread-safe as its member list and probe are.
 */
final class ClusterHealth {

  private final Supplier<List<EtcdMember>> members;
  private final Function<EtcdMember, URI> probe;

  ClusterHealth(Supplier<List<EtcdMember>> members, Function<EtcdMember, URI> probe) {
    this.members = members;
    this.probe = probe;
  }

  /** The index of the running member that says it leads, if any. */
  Optional<Integer> leader() {
    List<EtcdMember> all = members.get();
    for (int i = 0; i < all.size(); i++) {
      EtcdMember member = all.get(i);
      if (member.isRunning()
          && EtcdHttp.status(probe.apply(member)).map(EtcdHttp.Status::isLeader).orElse(false)) {
        return Optional.of(i);
      }
    }
    return Optional.empty();
  }

  /**
   * The index of the leader, waiting up to {@code timeout} for one.
   *
   * @throws IllegalStateException if no leader emerges in time
   */
  int awaitLeader(Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      Optional<Integer> leader = leader();
      if (leader.isPresent()) {
        return leader.get();
      }
      if (System.nanoTime() - deadline > 0) {
        throw new IllegalStateException(
            "no etcd leader among running members after " + timeout + ": " + describe());
      }
      EtcdHttp.pause();
    }
  }

  /** Whether every running member answers {@code /health} with true and one of them leads. */
  boolean healthy() {
    return members.get().stream().filter(EtcdMember::isRunning)
            .allMatch(m -> EtcdHttp.isHealthy(probe.apply(m)))
        && leader().isPresent();
  }

  /** Where to send a request: the leader, else any running member that answers. */
  URI anyServing() {
    Optional<Integer> leader = leader();
    if (leader.isPresent()) {
      return probe.apply(members.get().get(leader.get()));
    }
    return members.get().stream()
        .filter(EtcdMember::isRunning)
        .map(probe)
        .filter(EtcdHttp::isHealthy)
        .findFirst()
        .orElseThrow(() -> new IllegalStateException("no etcd member answers: " + describe()));
  }

  /** Each member's name, endpoint and state, e.g. {@code etcd0@http://... healthy, leader}. */
  String describe() {
    List<String> states = new ArrayList<>();
    for (EtcdMember member : members.get()) {
      String state;
      if (!member.isRunning()) {
        state = "stopped";
      } else {
        URI at = probe.apply(member);
        state =
            (EtcdHttp.isHealthy(at) ? "healthy" : "unhealthy")
                + EtcdHttp.status(at)
                    .map(s -> s.isLeader() ? ", leader" : ", leader=" + s.leaderId())
                    .orElse(", no status");
      }
      states.add(member.name() + "@" + member.clientEndpoint() + " " + state);
    }
    return String.join("; ", states);
  }
}
