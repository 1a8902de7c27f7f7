package io.steelyard.testkit;

/**
 * Which traffic of a member {@link EtcdMember#partition(Partition)} cuts. Either way connections
 * stay open and bytes stop arriving, as behind a real network partition (see {@link FaultProxy}).
 */
public enum Partition {
  /**
   * Raft and every other peer traffic to and from the member is cut; clients still reach it. The
   * member loses its leader (a leader steps down after an election timeout without a quorum), so
   * it answers clients with "no leader" or not at all, and cancels {@code requireLeader} watches.
   */
  FROM_PEERS,

  /** {@link #FROM_PEERS}, and clients' connections to the member go silent too. */
  FROM_EVERYTHING
}
