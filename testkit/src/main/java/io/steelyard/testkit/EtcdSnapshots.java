package io.steelyard.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code etcdctl snapshot save}, {@code status} and {@code restore}: the operator's backup and
 * disaster-recovery path. Restore is offline and per member: each member's data directory is
 * rebuilt from the file with the cluster's member names, peer URLs and token, so the restored
 * members form the same cluster (same member ids) at the snapshot's revision.
 */
final class EtcdSnapshots {

  private static final long TIMEOUT_SECONDS = 60;
  private static final Pattern REVISION = Pattern.compile("\"revision\"\\s*:\\s*(\\d+)");

  private EtcdSnapshots() {}

  /**
   * The etcdctl to use: {@code $ETCDCTL_BINARY}, else the {@code etcdctl} next to {@code etcd},
   * else the one on the PATH.
   */
  static Path etcdctl(Path etcd) {
    String env = System.getenv("ETCDCTL_BINARY");
    if (env != null && !env.isBlank()) {
      return Path.of(env);
    }
    Path sibling = etcd.resolveSibling("etcdctl");
    if (Files.isExecutable(sibling)) {
      return sibling;
    }
    String path = System.getenv("PATH");
    if (path != null) {
      for (String dir : path.split(java.io.File.pathSeparator)) {
        Path candidate = Path.of(dir.isEmpty() ? "." : dir, "etcdctl");
        if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
          return candidate;
        }
      }
    }
    throw new IllegalStateException(
        "no etcdctl next to " + etcd + " or on the PATH and ETCDCTL_BINARY is not set;"
            + " install it with `apt-get install -y etcd-client`");
  }

  /** Saves a snapshot of the member at {@code endpoint} to {@code file}; returns its revision. */
  static long save(Path etcdctl, URI endpoint, Path file) {
    run(etcdctl, List.of("--endpoints", endpoint.toString(), "snapshot", "save", file.toString()));
    return revision(etcdctl, file);
  }

  /** The revision a snapshot file was taken at. */
  static long revision(Path etcdctl, Path file) {
    String json = run(etcdctl, List.of("snapshot", "status", file.toString(), "--write-out", "json"));
    Matcher m = REVISION.matcher(json);
    if (!m.find()) {
      throw new IllegalStateException("etcdctl snapshot status " + file + ": no revision in " + json);
    }
    return Long.parseLong(m.group(1));
  }

  /** Rebuilds {@code dataDir} (which must not exist) from {@code file}, for member {@code name}. */
  static void restore(
      Path etcdctl, Path file, String name, Path dataDir, String initialCluster, String token, URI advertisePeer) {
    run(
        etcdctl,
        List.of(
            "snapshot", "restore", file.toString(),
            "--name", name,
            "--data-dir", dataDir.toString(),
            "--initial-cluster", initialCluster,
            "--initial-cluster-token", token,
            "--initial-advertise-peer-urls", advertisePeer.toString()));
  }

  private static String run(Path etcdctl, List<String> args) {
    List<String> command = new ArrayList<>();
    command.add(etcdctl.toString());
    command.addAll(args);
    ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
    builder.environment().keySet().removeIf(key -> key.startsWith("ETCDCTL_") || key.startsWith("ETCD_"));
    builder.environment().put("ETCDCTL_API", "3");
    try {
      Process p = builder.start();
      p.getOutputStream().close();
      byte[] out = p.getInputStream().readAllBytes(); // ends when etcdctl exits
      if (!p.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IllegalStateException(String.join(" ", command) + ": no exit after " + TIMEOUT_SECONDS + " s");
      }
      String text = new String(out, StandardCharsets.UTF_8);
      if (p.exitValue() != 0) {
        throw new IllegalStateException(String.join(" ", command) + " failed (exit " + p.exitValue() + "): " + text.trim());
      }
      return text;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot run " + etcdctl, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while running " + etcdctl, e);
    }
  }
}
