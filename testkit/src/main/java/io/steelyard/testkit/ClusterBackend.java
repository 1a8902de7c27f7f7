package io.steelyard.testkit;

import java.net.URI;
import java.util.List;

/** A way to run etcd members: local binaries or Docker containers. Not thread-safe; EtcdCluster serialises calls. */
interface ClusterBackend {

  /** Starts every member; returns once each serves (the cluster then waits for health and a leader). */
  void start();

  List<? extends EtcdMember> members();

  /** Where health and leadership of {@code member} are probed over plain HTTP. */
  default URI probeEndpoint(EtcdMember member) {
    return member.clientEndpoint();
  }

  /** Stops every member and releases everything; must not throw. */
  void close();
}
