package io.steelyard.benchmarks.soak;

import java.io.BufferedReader;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * One of the soak's child JVMs seen from the parent, and the little each child reports about
 * itself. The control channel is the child's stdin and stdout, one line per command or answer; a
 * command's answer ends with a line {@code END}. The child logs on stderr, which goes to a file.
 */
final class ChildProcess implements AutoCloseable {

  private final String name;
  private final Process process;
  private final BufferedReader out;
  private final Writer in;

  private ChildProcess(String name, Process process) {
    this.name = name;
    this.process = process;
    this.out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    this.in = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
  }

  /** Starts {@code main} in a JVM of its own with this JVM's class path; stderr to {@code log}. */
  static ChildProcess start(String name, Class<?> main, String heap, Path log, List<String> args)
      throws IOException {
    Path java = Paths.get(System.getProperty("java.home"), "bin", "java");
    List<String> cmd = new ArrayList<>(List.of(java.toString(), "-Xmx" + heap,
        "-Dlogback.configurationFile=agent-bench-logback.xml",
        "-cp", System.getProperty("java.class.path"), main.getName()));
    cmd.addAll(args);
    Process p = new ProcessBuilder(cmd).redirectError(log.toFile()).start();
    return new ChildProcess(name, p);
  }

  /** Waits for the line {@code word} (the child's "I am ready"), skipping nothing else. */
  void expect(String word) throws IOException {
    String line = out.readLine();
    if (line == null || !line.equals(word)) {
      throw new IllegalStateException(name + " JVM: expected " + word + ", got " + line
          + (line == null ? " (exited " + exitValueOrRunning() + "; see its log)" : ""));
    }
  }

  /** Sends {@code command} and returns the answer's lines up to {@code END}. */
  synchronized List<String> ask(String command) throws IOException {
    in.write(command + "\n");
    in.flush();
    List<String> lines = new ArrayList<>();
    for (String line; (line = out.readLine()) != null; ) {
      if (line.equals("END")) {
        return lines;
      }
      lines.add(line);
    }
    throw new IllegalStateException(name + " JVM ended while answering " + command + " (exit "
        + exitValueOrRunning() + "; see its log)");
  }

  long pid() {
    return process.pid();
  }

  private String exitValueOrRunning() {
    try {
      return process.waitFor(5, TimeUnit.SECONDS) ? Integer.toString(process.exitValue()) : "still running";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "unknown";
    }
  }

  @Override
  public void close() throws InterruptedException {
    try {
      in.write("EXIT\n");
      in.flush();
    } catch (IOException alreadyGone) {
      // nothing to tell it
    }
    try {
      if (!process.waitFor(60, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      }
    } finally {
      closeQuietly(in);
      closeQuietly(out);
    }
  }

  private static void closeQuietly(Closeable pipe) {
    try {
      pipe.close();
    } catch (IOException alreadyBroken) {
      // the child is gone; nothing left to release
    }
  }

  // ---- what a child reports about itself

  /**
   * {@code heapAfterGcBytes threads fds pooledThreads}: heap used after a full collection, live
   * threads, open fds, and how many of the threads are grpc's default executor's: a cached pool
   * whose size follows the calls' concurrency (a thread lives 60 s idle), so that a leak shows in
   * the difference.
   */
  static String selfSample() {
    var mem = ManagementFactory.getMemoryMXBean();
    mem.gc();
    long heap = mem.getHeapMemoryUsage().getUsed();
    int threads = ManagementFactory.getThreadMXBean().getThreadCount();
    long pooled = Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.getName().startsWith("grpc-default-executor-")).count();
    return String.format(Locale.ROOT, "%d %d %d %d", heap, threads, openFds(), pooled);
  }

  /** Open file descriptors of this process, from {@code /proc/self/fd}; -1 off Linux. */
  static long openFds() {
    try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
      return fds.count() - 1; // the directory stream's own descriptor
    } catch (IOException | UncheckedIOException e) {
      return -1;
    }
  }
}
