package io.steelyard.testkit;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;

/**
 * The {@code EtcdLauncher --control} command language: one command per line, one answer line
 * each, {@code OK[ result]} or {@code ERR reason}. A member is its index or {@code leader}.
 *
 * <pre>
 * endpoints | leader | alarms | await-healthy [SECONDS]
 * stop M | kill M | start M | restart M | freeze M | resume M
 * partition M peers|everything | heal M
 * fill-quota | free-quota | snapshot FILE | restore FILE
 * </pre>
 */
final class LauncherControl {

  static final String HELP =
      "commands: endpoints | leader | alarms | await-healthy [SECONDS] | stop M | kill M | start M | restart M"
          + " | freeze M | resume M | partition M peers|everything | heal M | fill-quota | free-quota"
          + " | snapshot FILE | restore FILE   (M: a member index or 'leader')";

  private static final Duration DEFAULT_HEALTH_TIMEOUT = Duration.ofSeconds(30);

  private final EtcdCluster cluster;

  LauncherControl(EtcdCluster cluster) {
    this.cluster = cluster;
  }

  /** Runs one command line; never throws. */
  String execute(String line) {
    List<String> words = List.of(line.trim().split("\\s+"));
    if (words.get(0).isEmpty()) {
      return "ERR empty command; " + HELP;
    }
    try {
      return "OK" + run(words.get(0).toLowerCase(Locale.ROOT), words.subList(1, words.size()));
    } catch (IllegalArgumentException e) {
      return "ERR " + e.getMessage() + "; " + HELP;
    } catch (RuntimeException e) {
      return "ERR " + String.valueOf(e.getMessage()).replace('\n', ' ');
    }
  }

  private String run(String command, List<String> args) {
    switch (command) {
      case "endpoints":
        arity(command, args, 0);
        return " " + cluster.endpoints();
      case "leader":
        arity(command, args, 0);
        return " " + cluster.leaderIndex();
      case "alarms":
        arity(command, args, 0);
        return cluster.alarms().isEmpty() ? "" : " " + String.join(" ", cluster.alarms());
      case "await-healthy":
        if (args.size() > 1) {
          throw new IllegalArgumentException("await-healthy: at most one argument (seconds)");
        }
        cluster.awaitHealthy(args.isEmpty() ? DEFAULT_HEALTH_TIMEOUT : Duration.ofSeconds(number(args.get(0))));
        return "";
      case "stop":
        member(command, args).stop();
        return "";
      case "kill":
        member(command, args).kill();
        return "";
      case "start":
        member(command, args).start();
        return "";
      case "restart":
        member(command, args).restart();
        return "";
      case "freeze":
        member(command, args).freeze();
        return "";
      case "resume":
        member(command, args).resume();
        return "";
      case "heal":
        member(command, args).heal();
        return "";
      case "partition":
        arity(command, args, 2);
        member(command, args.subList(0, 1)).partition(partition(args.get(1)));
        return "";
      case "fill-quota":
        arity(command, args, 0);
        return " " + cluster.fillQuota();
      case "free-quota":
        arity(command, args, 0);
        cluster.freeQuota();
        return "";
      case "snapshot":
        arity(command, args, 1);
        return " " + cluster.snapshot(Path.of(args.get(0)));
      case "restore":
        arity(command, args, 1);
        cluster.restore(Path.of(args.get(0)));
        return "";
      default:
        throw new IllegalArgumentException("unknown command: " + command);
    }
  }

  private EtcdMember member(String command, List<String> args) {
    arity(command, args, 1);
    String which = args.get(0);
    if ("leader".equalsIgnoreCase(which)) {
      return cluster.leader();
    }
    int index = number(which);
    if (index < 0 || index >= cluster.size()) {
      throw new IllegalArgumentException(
          command + ": member " + which + " (expected: 0.." + (cluster.size() - 1) + " or leader)");
    }
    return cluster.member(index);
  }

  private static Partition partition(String text) {
    switch (text.toLowerCase(Locale.ROOT)) {
      case "peers":
        return Partition.FROM_PEERS;
      case "everything":
        return Partition.FROM_EVERYTHING;
      default:
        throw new IllegalArgumentException("partition: " + text + " (expected: peers or everything)");
    }
  }

  private static void arity(String command, List<String> args, int n) {
    if (args.size() != n) {
      throw new IllegalArgumentException(command + ": " + args.size() + " argument(s) (expected: " + n + ")");
    }
  }

  private static int number(String text) {
    try {
      return Integer.parseInt(text);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("not a number: " + text, e);
    }
  }
}
