package io.steelyard.agent;

import java.util.Locale;

/**
 * Why a registration lost its lease and went {@link RegistrationState#RECOVERING}: told to {@link
 * RegistrationListener#onRecovery} and counted by {@code steelyard_registration_recoveries_total}
 * (tag {@code cause}, the {@link #tag()} below).
 */
public enum RecoveryCause {
  /**
   * etcd answered the keepalive, or refused a put with the lease, and no longer has it (TTL &le; 0
   * or NOT_FOUND): it expired while etcd could not be reached, someone revoked it, or etcd was
   * restored to before it was granted.
   */
  LEASE_EXPIRED,
  /**
   * No keepalive answer came within the TTL (jetcd then ends the keepalive, and the agent's own
   * clock says so too): etcd unreachable, or silent for longer than the TTL even after the
   * keepalive moved to a fresh connection.
   */
  KEEPALIVE_TIMEOUT,
  /** The watch saw the key deleted together with its lease (revoked or expired). */
  KEY_LOST;

  /** The metric tag value: the name in lower case, e.g. {@code keepalive_timeout}. */
  public String tag() {
    return name().toLowerCase(Locale.ROOT);
  }
}
