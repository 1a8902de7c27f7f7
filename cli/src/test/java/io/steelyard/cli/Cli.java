package io.steelyard.cli;

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
  private final WriteRunner writeRunner;

  private Cli(Map<String, String> env, WriteRunner writeRunner) {
    this.env = env;
    this.writeRunner = writeRunner;
  }

  /** A CLI that finds etcd through {@code STEELYARD_ETCD_ENDPOINTS}, as an operator's shell would. */
  static Cli withEndpoints(String endpoints) {
    return new Cli(Map.of("STEELYARD_ETCD_ENDPOINTS", endpoints), WriteRunner.STORE);
  }

  static Cli withEnv(Map<String, String> env) {
    return new Cli(env, WriteRunner.STORE);
  }

  /** This CLI with its write commands carried out by {@code writeRunner}. */
  Cli withWriteRunner(WriteRunner writeRunner) {
    return new Cli(env, writeRunner);
  }

  Result run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    long t0 = System.nanoTime();
    int code =
        SteelyardCli.run(
            new PrintWriter(out, true), new PrintWriter(err, true), env, StopSignal.onInterrupt(),
            writeRunner, args);
    Duration took = Duration.ofNanos(System.nanoTime() - t0);
    return new Result(code, out.toString(), err.toString(), took);
  }

  /** Starts a run on a thread of its own, for commands that keep running ({@code watch}). */
  Running start(String... args) {
    return new Running(env, args);
  }

  /** A run in progress: its output so far, and a way to interrupt it as Ctrl-C would. */
  static final class Running {
    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();
    private final java.util.concurrent.CompletableFuture<Result> result =
        new java.util.concurrent.CompletableFuture<>();
    private final Thread thread;

    private Running(Map<String, String> env, String[] args) {
      thread =
          new Thread(
              () -> {
                long t0 = System.nanoTime();
                try {
                  int code =
                      SteelyardCli.run(
                          new PrintWriter(out, true), new PrintWriter(err, true), env, args);
                  result.complete(
                      new Result(
                          code, out.toString(), err.toString(),
                          Duration.ofNanos(System.nanoTime() - t0)));
                } catch (Throwable e) {
                  result.completeExceptionally(e);
                }
              },
              "cli-" + String.join("-", args));
      thread.setDaemon(true);
      thread.start();
    }

    String out() {
      return out.toString();
    }

    String err() {
      return err.toString();
    }

    void interrupt() {
      thread.interrupt();
    }

    Result result(Duration max) {
      try {
        return result.get(max.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
      } catch (Exception e) {
        thread.interrupt();
        throw new AssertionError("no result within " + max + "; stdout so far:\n" + out()
            + "\nstderr so far:\n" + err(), e);
      }
    }
  }
}
