package io.steelyard.it;

import static java.nio.charset.StandardCharsets.UTF_8;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** The {@code steelyard} CLI ({@code SteelyardCli}) in a child JVM, as an operator runs it. */
public final class Cli {

  static final String MAIN = "io.steelyard.cli.SteelyardCli";

  /** The outcome of one command. */
  record Result(int exitCode, String stdout, String stderr) {}

  /** Runs one command to completion (bounded at 60 s). */
  static Result run(String endpoints, String... args) throws IOException, InterruptedException {
    Path out = Files.createTempFile("steelyard-cli", ".out");
    Path err = Files.createTempFile("steelyard-cli", ".err");
    try {
      Process p = builder(endpoints, args).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
      if (!p.waitFor(60, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IOException("steelyard " + String.join(" ", args) + ": no exit after 60 s");
      }
      return new Result(p.exitValue(), Files.readString(out, UTF_8), Files.readString(err, UTF_8));
    } finally {
      Files.deleteIfExists(out);
      Files.deleteIfExists(err);
    }
  }

  /** Starts a long-running command (the {@code register} sidecar); the caller stops it. */
  static Process start(String endpoints, String... args) throws IOException {
    return builder(endpoints, args)
        .redirectOutput(ProcessBuilder.Redirect.DISCARD)
        .redirectError(Path.of("target", "sidecar-" + System.nanoTime() + ".err").toFile())
        .start();
  }

  /** Starts a long-running command whose stdout goes to {@code stdout}; the caller stops it. */
  public static Process startCapturing(String endpoints, Path stdout, String... args) throws IOException {
    return builder(endpoints, args)
        .redirectOutput(stdout.toFile())
        .redirectError(Path.of("target", "cli-" + System.nanoTime() + ".err").toFile())
        .start();
  }

  private static ProcessBuilder builder(String endpoints, String... args) {
    List<String> cmd = new ArrayList<>();
    cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx96m");
    cmd.add("-XX:TieredStopAtLevel=1");
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(MAIN);
    cmd.add("--endpoints");
    cmd.add(endpoints);
    // Unless a test is about --timeout: a cold JVM on a loaded 2-core box was seen to need more
    // than the default 5 s for its first etcd call; 30 s is still well inside run()'s 60 s bound.
    if (!List.of(args).contains("--timeout")) {
      cmd.add("--timeout");
      cmd.add("30s");
    }
    cmd.addAll(List.of(args));
    return new ProcessBuilder(cmd);
  }

  private Cli() {}
}
