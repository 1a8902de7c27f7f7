package io.steelyard.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;

/**
 * Starts an etcd cluster for scripts and keeps it up until told to stop.
 *
 * <p>Once every member is healthy it prints exactly one line to stdout, {@code
 * ETCD_ENDPOINTS=http://127.0.0.1:PORT[,...]}, and then runs until SIGTERM/SIGINT or until its
 * stdin reaches end-of-file, whichever comes first; either way every etcd process and temp
 * directory is removed (and the watchdogs kill etcd even if this JVM is SIGKILLed).
 *
 * <p>A background job in a non-interactive shell ({@code java ... &}) gets {@code /dev/null} as
 * stdin, which is at EOF immediately; the launcher therefore ignores a stdin that is {@code
 * /dev/null} and relies on signals alone. {@code --ignore-stdin} does the same explicitly.
 *
 * <p>Options: {@code --members N} (1..5, default 1), {@code --backend auto|binary|docker} (default
 * auto), {@code --etcd-binary PATH}, {@code --ignore-stdin}, {@code --partitionable} (members
 * behind fault proxies), {@code --quota-backend-bytes N}, {@code --control}; anything after
 * {@code --} is passed to every etcd member.
 *
 * <p>With {@code --control}, stdin carries fault commands, one per line, each answered by one
 * line on stdout ({@code OK[ result]} or {@code ERR reason}); see {@link LauncherControl}:
 *
 * <pre>{@code
 * mkfifo ctl; java ... EtcdLauncher --members 3 --partitionable --control < ctl > etcd.out &
 * exec 3> ctl                      # keep the control pipe open
 * echo "freeze leader" >&3         # etcd.out: OK
 * echo "partition 1 peers" >&3; echo "heal 1" >&3; echo "kill 2" >&3; echo "start 2" >&3
 * exec 3>&-                        # EOF: the launcher stops the cluster and exits 0
 * }</pre>
 * Exit codes: 0 after stdin EOF, 1 if etcd cannot start (one-line reason on
 * stderr), 2 for bad arguments; a signal ends it with the JVM's usual 128+signal.
 *
 * <p>From a checkout:
 *
 * <pre>{@code
 * ./mvnw -B -q -pl testkit -am package -DskipTests
 * ./mvnw -B -q -pl testkit dependency:build-classpath -DincludeScope=runtime -Dmdep.outputFile=target/classpath.txt
 * java -cp "testkit/target/testkit-0.1.0-SNAPSHOT.jar:$(cat testkit/target/classpath.txt)" \
 *     io.steelyard.testkit.EtcdLauncher --members 3 > etcd.out &
 * # wait for the line, then: export "$(grep -m1 '^ETCD_ENDPOINTS=' etcd.out)"; ... ; kill $!
 * }</pre>
 */
public final class EtcdLauncher {

  private static final String USAGE =
      "usage: EtcdLauncher [--members N] [--backend auto|binary|docker] [--etcd-binary PATH]"
          + " [--ignore-stdin] [--partitionable] [--quota-backend-bytes N] [--control] [-- etcd-flags...]";

  private EtcdLauncher() {}

  public static void main(String[] args) {
    EtcdCluster.Builder builder = EtcdCluster.builder();
    boolean ignoreStdin = false;
    boolean control = false;
    try {
      List<String> extra = new ArrayList<>();
      for (int i = 0; i < args.length; i++) {
        switch (args[i]) {
          case "--members":
            builder.members(parseInt(value(args, ++i, "--members")));
            break;
          case "--backend":
            builder.backend(parseBackend(value(args, ++i, "--backend")));
            break;
          case "--etcd-binary":
            builder.etcdBinary(Path.of(value(args, ++i, "--etcd-binary")));
            break;
          case "--ignore-stdin":
            ignoreStdin = true;
            break;
          case "--partitionable":
            builder.partitionable();
            break;
          case "--quota-backend-bytes":
            builder.quotaBackendBytes(parseLong("--quota-backend-bytes", value(args, ++i, "--quota-backend-bytes")));
            break;
          case "--control":
            control = true;
            break;
          case "-h":
          case "--help":
            System.out.println(USAGE);
            return;
          case "--":
            extra.addAll(List.of(args).subList(i + 1, args.length));
            i = args.length;
            break;
          default:
            throw new IllegalArgumentException("unknown argument: " + args[i]);
        }
      }
      builder.extraArgs(extra.toArray(String[]::new));
    } catch (IllegalArgumentException e) {
      System.err.println("etcd launcher: " + e.getMessage());
      System.err.println(USAGE);
      System.exit(2);
      return;
    }

    EtcdCluster cluster = builder.build();
    // EtcdCluster's own shutdown hook also closes it; this one makes the launcher's intent local.
    Runtime.getRuntime().addShutdownHook(new Thread(cluster::close, "etcd-launcher-shutdown"));
    try {
      cluster.start();
    } catch (RuntimeException e) {
      System.err.println("etcd launcher: " + e.getMessage());
      System.exit(1);
      return;
    }
    PrintStream out = System.out;
    out.println("ETCD_ENDPOINTS=" + cluster.endpoints());
    out.flush();

    if (control) {
      serveControl(new LauncherControl(cluster), System.in, out);
      System.exit(0);
    }
    if (!ignoreStdin && !stdinIsDevNull()) {
      drain(System.in);
      System.exit(0); // the shutdown hooks close the cluster
    }
    try {
      new CountDownLatch(1).await(); // until a signal runs the shutdown hooks
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      System.exit(0);
    }
  }

  private static String value(String[] args, int i, String option) {
    if (i >= args.length) {
      throw new IllegalArgumentException(option + ": missing value");
    }
    return args[i];
  }

  private static int parseInt(String text) {
    try {
      return Integer.parseInt(text);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("--members: " + text + " (expected: 1..5)", e);
    }
  }

  private static EtcdCluster.Backend parseBackend(String text) {
    try {
      return EtcdCluster.Backend.valueOf(text.toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("--backend: " + text + " (expected: auto, binary or docker)", e);
    }
  }

  private static long parseLong(String option, String text) {
    try {
      return Long.parseLong(text);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(option + ": " + text + " (expected: a number of bytes)", e);
    }
  }

  /** Answers each command line until EOF, which means the caller is done. */
  private static void serveControl(LauncherControl control, InputStream in, PrintStream out) {
    java.io.BufferedReader reader =
        new java.io.BufferedReader(new java.io.InputStreamReader(in, java.nio.charset.StandardCharsets.UTF_8));
    try {
      String line;
      while ((line = reader.readLine()) != null) {
        if (line.isBlank()) {
          continue;
        }
        out.println(control.execute(line));
        out.flush();
      }
    } catch (IOException e) {
      // a broken stdin means the same as EOF
    }
  }

  private static boolean stdinIsDevNull() {
    try {
      Path stdin = Path.of("/proc/self/fd/0");
      return Files.exists(stdin) && Files.isSameFile(stdin.toRealPath(), Path.of("/dev/null"));
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  private static void drain(InputStream in) {
    byte[] buffer = new byte[1024];
    try {
      while (in.read(buffer) != -1) {
        // discard: stdin only tells us when our parent is gone
      }
    } catch (IOException e) {
      // a broken stdin means the same as EOF
    }
  }
}
