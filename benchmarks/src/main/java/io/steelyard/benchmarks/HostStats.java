package io.steelyard.benchmarks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * What the scenario benchmarks report about the machine and its processes, read from Linux's
 * {@code /proc}: the load average next to every figure (the machine is shared), and a process's
 * resident memory and threads (etcd's gRPC proxy exports no metrics of its own).
 *
 * <pre>{@code
 * String load = HostStats.loadAverage();
 * long kb = HostStats.rssKb(proxy.pid().orElseThrow());
 * }</pre>
 */
public final class HostStats {

  private HostStats() {}

  /** The 1, 5 and 15 minute load averages, e.g. {@code "1.20 1.49 1.72"}; "unknown" off Linux. */
  public static String loadAverage() {
    try {
      String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split(" ");
      return f[0] + " " + f[1] + " " + f[2];
    } catch (IOException | RuntimeException e) {
      return "unknown";
    }
  }

  /** The resident memory ({@code VmRSS}) of process {@code pid}, in KB. */
  public static long rssKb(long pid) throws IOException {
    return statusField(pid, "VmRSS:");
  }

  /** The threads of process {@code pid}. */
  public static int threads(long pid) throws IOException {
    return (int) statusField(pid, "Threads:");
  }

  private static long statusField(long pid, String field) throws IOException {
    for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
      if (line.startsWith(field)) {
        return Long.parseLong(line.substring(field.length()).trim().split("\\s+")[0]);
      }
    }
    throw new IOException("no " + field + " in /proc/" + pid + "/status");
  }
}
