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
  JSON;

  /**
   * The format a value of this format is written in when it carries {@code weight}: {@link
   * #PLAIN} cannot carry a weight other than {@value Validation#DEFAULT_WEIGHT}, so it becomes
   * {@link #PIPE}, the simplest format that can; every other format stays. The agent's writes
   * and every rewrite of an existing value follow this rule.
   *
   * <pre>{@code
   * ValueFormat.PLAIN.forWeight(5);   // PIPE
   * ValueFormat.PLAIN.forWeight(1);   // PLAIN
   * ValueFormat.JSON.forWeight(5);    // JSON
   * }</pre>
   */
  public ValueFormat forWeight(int weight) {
    return this == PLAIN && weight != Validation.DEFAULT_WEIGHT ? PIPE : this;
  }
}
