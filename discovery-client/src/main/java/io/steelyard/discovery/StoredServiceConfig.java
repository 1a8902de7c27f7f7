package io.steelyard.discovery;

import javax.annotation.Nullable;

/**
 * What a {@link ServiceConfigWatcher} knows of a service's stored service config: not read yet, read
 * and absent, read and present (its text and mod revision), or unreadable so far (etcd refused or
 * failed before the first answer; a resolver then goes on without it rather than hold back the
 * instance list).
 */
record StoredServiceConfig(State state, @Nullable String json, long modRevision) {

  enum State {
    UNKNOWN,
    ABSENT,
    PRESENT,
    UNREADABLE
  }

  static final StoredServiceConfig UNKNOWN = new StoredServiceConfig(State.UNKNOWN, null, 0);
  static final StoredServiceConfig ABSENT = new StoredServiceConfig(State.ABSENT, null, 0);
  static final StoredServiceConfig UNREADABLE = new StoredServiceConfig(State.UNREADABLE, null, 0);

  static StoredServiceConfig present(String json, long modRevision) {
    return new StoredServiceConfig(State.PRESENT, json, modRevision);
  }

  /** Whether a resolver may publish: the config was read, or reading it failed. */
  boolean settled() {
    return state != State.UNKNOWN;
  }
}
