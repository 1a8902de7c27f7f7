package io.steelyard.discovery;

/**
 * What a {@link PrefixWatcher} delivers to each of its subscribers: the engine's own contract,
 * separate from the public {@link ServiceWatcher.Listener} so that either can change without the
 * other. {@link ServiceWatcher} and {@link EtcdNameResolver} adapt it to their users.
 *
 * <p>Threading: both methods are called on the watcher's serialized executor, one call at a time
 * per watcher; they must return quickly and never block. An exception thrown from either is
 * logged by the watcher and does not reach other subscribers.
 */
interface WatchListener {

  /** A complete new view of the service: the first listing, then one per coalesced change. */
  void onSnapshot(Snapshot snapshot);

  /**
   * No listing has succeeded yet and the last attempt failed; retries continue. {@code cause} is
   * a {@link io.steelyard.registry.RegistryException}: its kind says whether etcd could not be
   * reached or refused, its message says why in one line. Never called after the first snapshot.
   */
  void onUnavailable(Throwable cause);
}
