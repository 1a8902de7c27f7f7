package io.steelyard.testkit;

import java.util.List;

/** The etcd flags every test member runs with, whichever backend starts it. */
final class EtcdTuning {

  /**
   * 100 ms heartbeats and a 1 s election timeout (etcd's defaults, and the smallest that stay
   * stable on a loaded 2-core machine), snapshots often enough to keep the WAL short, and a 256 MiB
   * quota so a runaway test fails instead of filling the disk.
   */
  static final List<String> FLAGS =
      List.of(
          "--heartbeat-interval", "100",
          "--election-timeout", "1000",
          "--snapshot-count", "5000",
          "--quota-backend-bytes", Long.toString(256L * 1024 * 1024));

  /**
   * Tests never need durability across power loss. etcd 3.5+ only: the Docker image has it, the
   * binary backend probes {@code etcd --help} for it.
   */
  static final String NO_FSYNC = "--unsafe-no-fsync";

  private EtcdTuning() {}
}
