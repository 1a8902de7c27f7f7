package io.steelyard.it;

import static java.nio.charset.StandardCharsets.UTF_8;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A greeter server in its own JVM ({@code GreeterServerMain}), for the one thing an in-process
 * server cannot do: die by SIGKILL, with its lease still alive in etcd.
 */
public final class ChildGreeter implements AutoCloseable {

  private static final Pattern READY = Pattern.compile("^READY address=(\\S+) service=(\\S+) weight=(\\d+)$");

  private final Process process;
  private final String address;

  private ChildGreeter(Process process, String address) {
    this.process = process;
    this.address = address;
  }

  /** Starts {@code GreeterServerMain} with {@code args} and waits for its READY line. */
  public static ChildGreeter start(String... args) throws IOException, InterruptedException {
    return startMain("io.steelyard.examples.GreeterServerMain", args);
  }

  static ChildGreeter startMain(String mainClass, String... args) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx128m");
    cmd.add("-XX:TieredStopAtLevel=1");
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(mainClass);
    cmd.addAll(List.of(args));
    Path err = Path.of("target", "child-" + System.nanoTime() + ".err");
    Process p =
        new ProcessBuilder(cmd).redirectError(err.toFile()).redirectInput(ProcessBuilder.Redirect.PIPE).start();
    CompletableFuture<String> ready = new CompletableFuture<>();
    Thread reader =
        new Thread(
            () -> {
              try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                  Matcher m = READY.matcher(line);
                  if (m.matches()) {
                    ready.complete(m.group(1));
                  }
                }
                ready.completeExceptionally(new IOException("exited before READY; see " + err.toAbsolutePath()));
              } catch (IOException e) {
                ready.completeExceptionally(e);
              }
            },
            "child-stdout");
    reader.setDaemon(true);
    reader.start();
    try {
      return new ChildGreeter(p, ready.get(60, TimeUnit.SECONDS));
    } catch (ExecutionException | TimeoutException e) {
      p.destroyForcibly();
      throw new IOException("greeter child did not become ready: " + e.getMessage(), e);
    }
  }

  public String address() {
    return address;
  }

  /** SIGKILL, as a crash: no deregistration, the lease lives on until its TTL. */
  public void kill() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor(10, TimeUnit.SECONDS);
  }

  /** SIGTERM: the graceful shutdown; returns the exit code. */
  int terminate() throws InterruptedException {
    process.destroy();
    if (!process.waitFor(30, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      process.waitFor(10, TimeUnit.SECONDS);
    }
    return process.exitValue();
  }

  @Override
  public void close() throws InterruptedException {
    if (process.isAlive()) {
      process.destroyForcibly();
      process.waitFor(10, TimeUnit.SECONDS);
    }
  }
}
