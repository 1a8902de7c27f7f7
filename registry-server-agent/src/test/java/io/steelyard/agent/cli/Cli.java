package io.steelyard.agent.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.Map;

/** Runs the CLI in-process through its picocli entry point and captures what it printed. */
final class Cli {

  /** What one run returned and printed. */
  record Result(int exitCode, String out, String err, Duration took) {
    @Override
    public String toString() {
      return "exit " + exitCode + " after " + took.toMillis() + "ms\n--- stdout\n" + out
          + "--- stderr\n" + err;
    }
  }

  private final Map<String, String> env;

  private Cli(Map<String, String> env) {
    this.env = env;
  }

  /** A CLI that finds etcd through {@code STEELYARD_ETCD_ENDPOINTS}, as an operator's shell would. */
  static Cli withEndpoints(String endpoints) {
    return new Cli(Map.of("STEELYARD_ETCD_ENDPOINTS", endpoints));
  }

  static Cli withEnv(Map<String, String> env) {
    return new Cli(env);
  }

  Result run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    long t0 = System.nanoTime();
    int code = SteelyardCli.run(new PrintWriter(out, true), new PrintWriter(err, true), env, args);
    Duration took = Duration.ofNanos(System.nanoTime() - t0);
    return new Result(code, out.toString(), err.toString(), took);
  }
}
