package io.steelyard.cli;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import io.steelyard.registry.DecodedValue;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.ValueCodec;
import io.steelyard.registry.internal.EtcdCalls;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
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
      "Lists, then watches from the listed revision + 1 (no change in between",
      "is lost), with require-leader so a partitioned member cannot stall it."
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

  /** How often the waiting thread checks whether the watch must be set up again. */
  private static final long POLL_MILLIS = 200;

  // Guarded by this: the listing and the watch callbacks both update it.
  private final Map<String, DecodedValue> known = new HashMap<>();
  private int changes;
  private boolean warned;
  // Bumped for every new watcher, so late callbacks of a closed one are ignored.
  private int generation;

  private KeyLayout layout;

  @Override
  public Integer call() {
    checkService(service);
    if (count != null && count < 1) {
      SteelyardCli.usage(spec, () -> {
        throw new IllegalArgumentException("count: " + count + " (expected: >= 1)");
      });
    }
    SteelyardCli cli = cli();
    SteelyardCli.ConnectionSettings settings = cli.settings(spec);
    layout = settings.layout();
    Client client = cli.client(settings);
    ByteSequence prefix = layout.servicePrefixBytes(service);
    StopSignal stop = cli.stopSignal();

    GetResponse listed = list(client, prefix);
    long from = apply(listed, true, stop);
    Watch.Watcher watcher = watch(client, prefix, from, stop);
    err().println(
        "watching " + layout.servicePrefix(service) + " from revision " + from + " (Ctrl-C to stop)");
    err().flush();
    stop.listen();
    try {
      while (!stop.await(Duration.ofMillis(POLL_MILLIS))) {
        if (!watcher.isClosed()) {
          continue;
        }
        // jetcd reports every error to the listener but resumes the watch itself (from the last
        // revision seen) unless the error is final: compacted, no leader, halted. Only then is
        // the watcher closed, and we list again, print what changed meanwhile, and watch anew.
        synchronized (this) {
          warned = false; // always say this one: what follows comes from a listing, not events
        }
        warn("etcd ended the watch; listing again");
        watcher = null;
        while (watcher == null && !stop.isStopped()) {
          try {
            from = apply(list(client, prefix), false, stop);
            watcher = watch(client, prefix, from, stop);
          } catch (RegistryException e) {
            warn(e.getMessage() + "; retrying");
            stop.await(Duration.ofSeconds(1));
          }
        }
      }
    } finally {
      if (watcher != null) {
        watcher.close();
      }
    }
    return SteelyardCli.EXIT_OK;
  }

  private Watch.Watcher watch(Client client, ByteSequence prefix, long from, StopSignal stop) {
    WatchOption option =
        WatchOption.builder()
            .isPrefix(true)
            .withRevision(from)
            .withRequireLeader(true)
            .build();
    int gen;
    synchronized (this) {
      gen = ++generation;
    }
    return client.getWatchClient()
        .watch(
            prefix,
            option,
            Watch.listener(
                r -> onEvents(gen, r, stop),
                e -> warn("watch interrupted (" + SteelyardCli.oneLine(e.getMessage()) + ")"),
                () -> {}));
  }

  /**
   * Takes a listing as the new known state. The first one prints {@code present} lines; a later
   * one (after the watch had to be set up again) prints what changed, as the watch would have.
   * Returns the revision to watch from.
   */
  private synchronized long apply(GetResponse listed, boolean first, StopSignal stop) {
    Map<String, KeyValue> now = new HashMap<>();
    for (KeyValue kv : listed.getKvs()) {
      now.put(kv.getKey().toString(StandardCharsets.UTF_8), kv);
    }
    if (first) {
      for (KeyValue kv : listed.getKvs()) {
        String key = kv.getKey().toString(StandardCharsets.UTF_8);
        DecodedValue v = ValueCodec.decode(kv.getValue().getBytes());
        known.put(key, v);
        if (v instanceof DecodedValue.Accepted a) {
          print("present " + a.address() + " weight=" + a.weight() + metadataSuffix(a));
        } else {
          print("malformed " + key + ": " + ((DecodedValue.Rejected) v).reason());
        }
      }
    } else {
      for (String key : new java.util.ArrayList<>(known.keySet())) {
        if (!now.containsKey(key)) {
          emit(removed(key), stop);
        }
      }
      for (KeyValue kv : listed.getKvs()) {
        emit(put(kv), stop);
      }
      warned = false;
    }
    out().flush();
    return listed.getHeader().getRevision() + 1;
  }
  private GetResponse list(Client client, ByteSequence prefix) {
    return new EtcdCalls(cli().timeout())
        .await(
            "list " + service,
            () -> client.getKVClient().get(prefix, GetOption.builder().isPrefix(true).build()));
  }

  // jetcd delivers the responses of one watcher in order, on its executor.
  private synchronized void onEvents(int gen, WatchResponse response, StopSignal stop) {
    if (gen != generation) {
      return;
    }
    warned = false;
    for (WatchEvent event : response.getEvents()) {
      switch (event.getEventType()) {
        case PUT -> emit(put(event.getKeyValue()), stop);
        case DELETE -> emit(removed(event.getKeyValue().getKey().toString(StandardCharsets.UTF_8)), stop);
        default -> { }
      }
    }
    out().flush();
  }

  /** Prints a change line, unless {@code --count} lines were printed already. */
  private void emit(@Nullable String line, StopSignal stop) {
    if (line == null || (count != null && changes >= count)) {
      return;
    }
    print(line);
    changes++;
    if (count != null && changes >= count) {
      out().flush();
      stop.stop();
    }
  }

  /** The line for a key now holding {@code kv}'s value, or null when nothing visible changed. */
  @Nullable
  private String put(KeyValue kv) {
    String key = kv.getKey().toString(StandardCharsets.UTF_8);
    DecodedValue before = known.get(key);
    DecodedValue now = ValueCodec.decode(kv.getValue().getBytes());
    known.put(key, now);
    if (!(now instanceof DecodedValue.Accepted a)) {
      return now.equals(before)
          ? null
          : "malformed " + key + ": " + ((DecodedValue.Rejected) now).reason();
    }
    if (!(before instanceof DecodedValue.Accepted b)) {
      return "added " + a.address() + " weight=" + a.weight() + metadataSuffix(a);
    }
    if (b.weight() != a.weight()) {
      return "weight " + a.address() + " " + b.weight() + " -> " + a.weight();
    }
    if (!b.equals(a)) {
      return "updated " + a.address() + " weight=" + a.weight() + " "
          + ListCommand.metadataText(a.metadata());
    }
    return null; // the same value written again (e.g. a re-registration): no change to show
  }

  /** The line for a key that is gone, or null if it was not known. */
  @Nullable
  private String removed(String key) {
    DecodedValue before = known.remove(key);
    if (before == null) {
      return null;
    }
    return "removed "
        + (before instanceof DecodedValue.Accepted b
            ? b.address()
            : layout.instanceId(service, key).orElse(key));
  }

  /** One warning on stderr per interruption, until events flow again. */
  private synchronized void warn(String what) {
    if (!warned) {
      err().println("steelyard: " + layout.servicePrefix(service) + ": " + what);
      err().flush();
      warned = true;
    }
  }

  private static String metadataSuffix(DecodedValue.Accepted a) {
    return a.metadata().isEmpty() ? "" : " " + ListCommand.metadataText(a.metadata());
  }

  private void print(String line) {
    out().println(line);
  }
}
