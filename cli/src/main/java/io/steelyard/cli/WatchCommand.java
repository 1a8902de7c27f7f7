package io.steelyard.cli;

import io.steelyard.discovery.ServiceWatcher;
import io.steelyard.discovery.Snapshot;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.internal.EtcdErrors;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.annotation.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(
    name = "watch",
    mixinStandardHelpOptions = true,
    description = {
      "Print the instances of SERVICE, then each change.",
      "Runs until interrupted (Ctrl-C: exit 0). One line per instance or change:",
      "  present ADDRESS weight=W [k=v,...]  registered when the watch started",
      "  added ADDRESS weight=W [k=v,...]    a new instance",
      "  weight ADDRESS OLD -> NEW           its weight changed",
      "  updated ADDRESS weight=W k=v,...    its metadata changed",
      "  removed ADDRESS                     key deleted or lease expired",
      "  malformed KEY: REASON               a value that cannot be read",
      "Follows the service as the client library does (ServiceWatcher): lists,",
      "then watches from the listed revision + 1, so no change in between is",
      "lost; while etcd is away it keeps the last list and, once etcd is back,",
      "prints what changed meanwhile."
    },
    footer = {
      "",
      "Examples:",
      "  steelyard watch greeter",
      "  steelyard watch greeter --count 1   # wait for the next change, print it, exit 0"
    })
final class WatchCommand extends CliCommand {

  @Parameters(index = "0", paramLabel = "SERVICE", description = "Service name, e.g. greeter.")
  String service;

  @Option(
      names = "--count",
      paramLabel = "N",
      description = {
        "Exit 0 after N change lines (present lines do",
        "not count); for scripts and tests.",
        "Example: --count 1"
      })
  @Nullable
  Integer count;

  // Guarded by this: written by the watcher's listener (on the discovery thread), read by
  // the command's thread once it stops.
  @Nullable private WatchLines.View previous;
  private boolean stale;
  private int changes;
  private boolean done;
  @Nullable private RegistryException lastFailure;

  @Override
  public Integer call() {
    checkService(service);
    if (count != null && count < 1) {
      Usage.check(spec, () -> {
        throw new IllegalArgumentException("count: " + count + " (expected: >= 1)");
      });
    }
    SteelyardCli cli = cli();
    ConnectionSettings settings = settings();
    cli.noteConnection(settings);
    KeyLayout layout = settings.layout();
    WatchLines lines = new WatchLines(layout, service);
    StopSignal stop = cli.stopSignal();
    String what = "watch " + service;
    CompletableFuture<Void> listed = new CompletableFuture<>();

    ServiceWatcher.Listener listener =
        new ServiceWatcher.Listener() {
          @Override
          public void onSnapshot(Snapshot snapshot) {
            show(snapshot, lines, layout, stop);
            listed.complete(null);
          }

          @Override
          public void onUnavailable(Throwable cause) {
            RegistryException e =
                cause instanceof RegistryException re ? re : EtcdErrors.toRegistryException(what, cause);
            synchronized (WatchCommand.this) {
              lastFailure = e;
            }
            // A refused login, permission or certificate will not pass by retrying: say so now.
            // Anything else is retried by the watcher until --timeout runs out.
            if (e.kind().refused()) {
              listed.completeExceptionally(e);
            }
          }
        };
    // Zero debounce: one snapshot per etcd watch response, so each change gets its line.
    try (ServiceWatcher watcher =
        ServiceWatcher.builder(settings.connection(), service)
            .layout(layout)
            .debounce(Duration.ZERO)
            .open(listener)) {
      try {
        awaitFirstList(listed, what);
        stop.listen();
        stop.await();
      } finally {
        finish(); // before the watcher closes, which a snapshot on its way may race
      }
    }
    return ExitCodes.OK;
  }

  /** From now on a snapshot still on its way prints nothing: the command's output is complete. */
  private synchronized void finish() {
    done = true;
  }

  /**
   * Waits for the first list, at most {@code --timeout}: a watch that cannot start fails like
   * every other command (exit 1, one line), instead of waiting for etcd forever.
   */
  private void awaitFirstList(CompletableFuture<Void> listed, String what) {
    Duration timeout = cli().timeout();
    try {
      listed.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      RegistryException last;
      synchronized (this) {
        last = lastFailure;
      }
      // What the last attempt ran into (e.g. "could not be reached ... UNAVAILABLE") says more
      // than "did not answer"; without one, etcd stayed silent for the whole --timeout.
      throw last != null ? last : EtcdErrors.timedOut(what, timeout, e);
    } catch (ExecutionException e) {
      throw (RegistryException) e.getCause();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new RegistryException(
          RegistryException.Kind.UNAVAILABLE, "interrupted while waiting for etcd (" + what + ")", e);
    }
  }

  /** Prints what {@code snapshot} shows that the previous one did not. On the discovery thread. */
  private synchronized void show(
      Snapshot snapshot, WatchLines lines, KeyLayout layout, StopSignal stop) {
    if (done) {
      return;
    }
    WatchLines.View view = WatchLines.View.of(snapshot);
    String prefix = layout.servicePrefix(service);
    if (previous == null) {
      lines.present(view).forEach(out()::println);
      out().flush();
      err().println(
          "watching " + prefix + " from revision " + (snapshot.revision() + 1) + " (Ctrl-C to stop)");
    }
    if (snapshot.isStale() != stale) {
      stale = snapshot.isStale();
      // The watcher logs the cause (a WARN on stderr); this line says what the output will do.
      err().println("steelyard: " + prefix + ": "
          + (stale
              ? "lost etcd; keeping the last list, resuming the watch or listing again once"
                  + " etcd answers"
              : "etcd answers again (revision " + snapshot.revision() + ")"));
    }
    err().flush();
    if (previous != null) {
      lines.changes(previous, view).forEach(line -> emit(line, stop));
      out().flush();
    }
    previous = view;
  }

  /** Prints a change line, unless {@code --count} lines were printed already. */
  private void emit(String line, StopSignal stop) {
    if (count != null && changes >= count) {
      return;
    }
    out().println(line);
    changes++;
    if (count != null && changes >= count) {
      out().flush();
      stop.stop();
    }
  }
}
