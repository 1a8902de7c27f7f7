package io.steelyard.registry;

/** How an instance is encoded in its etcd value. See {@code docs/key-layout.md}. */
public enum ValueFormat {
  /** {@code 10.0.0.7:50051|5}: the agent's default. */
  PIPE,
  /** {@code 10.0.0.7:50051}: go-zero style; read only, weight = default. */
  PLAIN,
  /**
   * {@code {"Op":0,"Addr":"10.0.0.7:50051","Metadata":{"weight":5}}}: byte-compatible with Go's
   * {@code go.etcd.io/etcd/client/v3/naming/endpoints}.
   */
  JSON
}
