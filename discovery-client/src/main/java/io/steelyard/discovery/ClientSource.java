package io.steelyard.discovery;

/**
 * The shared etcd client of a watcher's connection, which may be replaced: after a long outage
 * the gRPC channel under jetcd backs its reconnects off towards two minutes and jetcd exposes no
 * {@code resetConnectBackoff()}, so a fresh client is the way to notice a recovered etcd within
 * seconds.
 */
interface ClientSource {
  EtcdReader reader();

  /** {@code failed} keeps failing: replace it, unless that was done recently or already. */
  void renew(EtcdReader failed);
}
