package io.steelyard.testkit;

import java.net.URI;
import java.util.Optional;

/**
 * One member of an {@link EtcdCluster}: a real etcd server that a test can stop, kill and start
 * again to exercise failover.
 *
 * <pre>{@code
 * EtcdMember leader = etcd.leader();
 * leader.kill();                 // SIGKILL; the other members elect a new leader
 * etcd.awaitHealthy(Duration.ofSeconds(15));
 * leader.start();                // same name, data directory and ports; rejoins the cluster
 * }</pre>
 *
 * <p>Fault tools beyond stop/kill ({@link #freeze()}, {@link #partition(Partition)}, {@link
 * #metric}) need the binary backend; the Docker backend throws {@link
 * UnsupportedOperationException} for them.
 *
 * <pre>{@code
 * etcd.leader().freeze();                       // SIGSTOP: alive, silent, its sockets open
 * etcd.member(1).partition(Partition.FROM_PEERS); // needs EtcdCluster.builder().partitionable()
 * etcd.member(1).heal();
 * }</pre>
 *
 * <p>Every method blocks until the member reached the requested state, with an internal bound;
 * methods are thread-safe. With the binary backend the client endpoint never changes; with the
 * Docker backend the host port may change on {@link #start()}, so read {@link #clientEndpoint()}
 * (or {@link EtcdCluster#clientEndpoints()}) again after a restart.
 */
public interface EtcdMember {

  /** The etcd member name, {@code etcd0}, {@code etcd1}, ... */
  String name();

  /** The client URL reachable from the test JVM, e.g. {@code http://127.0.0.1:40001}. */
  URI clientEndpoint();

  /** Whether the member's process (or container) is running. */
  boolean isRunning();

  /** Stops gracefully (SIGTERM) and waits for the exit; the data directory is kept. No-op if stopped. */
  void stop();

  /** Kills (SIGKILL) and waits for the exit; the data directory is kept. No-op if stopped. */
  void kill();

  /**
   * Starts again with the same data directory and ports and waits until the member serves: until
   * it is healthy if, with it, a quorum of members runs; otherwise (etcd serves clients only within
   * a quorum) until it listens on its client port, and a later {@link EtcdCluster#awaitHealthy}
   * waits for the rest. No-op if running.
   */
  void start();

  /** {@link #stop()} followed by {@link #start()}. */
  void restart();

  /**
   * Freezes the running member (SIGSTOP to the etcd process) and waits until the kernel reports
   * it stopped: it keeps its ports and connections but answers nothing, as a member stuck in a
   * long GC pause or on a stalled disk. {@link #stop()} and {@link #kill()} still work on it.
   *
   * @throws IllegalStateException if the member is not running
   */
  default void freeze() {
    throw binaryOnly("freeze");
  }

  /** Lets a frozen member run again (SIGCONT); no-op if it is not frozen. */
  default void resume() {
    throw binaryOnly("resume");
  }

  /** Whether the member is frozen by {@link #freeze()}. */
  default boolean isFrozen() {
    return false;
  }

  /**
   * Cuts the member off, until {@link #heal()}: with {@link Partition#FROM_PEERS} from the other
   * members (both directions), with {@link Partition#FROM_EVERYTHING} from clients too. The
   * fault proxies in front of its ports then hold every byte: connections stay open and go
   * silent. Replaces an earlier partition of this member. The cluster must be built with
   * {@link EtcdCluster.Builder#partitionable()}.
   */
  default void partition(Partition how) {
    throw binaryOnly("partition");
  }

  /** Ends this member's partition: what was held is delivered and traffic flows again. */
  default void heal() {
    throw binaryOnly("heal");
  }

  /** How the member is partitioned now, if it is. */
  default Optional<Partition> partitioned() {
    return Optional.empty();
  }

  /**
   * A value from the member's Prometheus {@code /metrics}, read directly (past any fault proxy):
   * the sum of the samples of {@code name} whose labels include each {@code label, value} pair,
   * e.g. {@code metric("etcd_debugging_mvcc_watch_stream_total")} (watch streams open on this
   * member) or {@code metric("grpc_server_started_total", "grpc_method", "LeaseKeepAlive")}.
   */
  default double metric(String name, String... labelPairs) {
    throw binaryOnly("metric");
  }

  private UnsupportedOperationException binaryOnly(String what) {
    return new UnsupportedOperationException(
        what + ": needs the binary backend (EtcdCluster.Backend.BINARY); " + name() + " runs elsewhere");
  }
}
