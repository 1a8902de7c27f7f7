package io.steelyard.testkit;

import java.net.URI;

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
}
