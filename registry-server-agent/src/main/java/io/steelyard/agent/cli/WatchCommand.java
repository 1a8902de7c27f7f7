package io.steelyard.agent.cli;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import io.steelyard.agent.RegistryException;
import io.steelyard.registry.DecodedValue;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.ValueCodec;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
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
        "not count); for scripts and tests."
      })
  @Nullable
  Integer count;

  private final Map<String, DecodedValue> known = new HashMap<>();
  private final AtomicReference<Throwable> failure = new AtomicReference<>();
  private KeyLayout layout;
  private int changes;
  @Nullable private Throwable failed;

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
    GetResponse listed = list(client, prefix);
    synchronized (this) {
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
      out().flush();
    }
    long from = listed.getHeader().getRevision() + 1;
    StopSignal stop = cli.stopSignal();
    WatchOption option =
        WatchOption.builder()
            .isPrefix(true)
            .withRevision(from)
            .withRequireLeader(true)
            .build();
    Watch.Watcher watcher =
        client.getWatchClient()
            .watch(
                prefix,
                option,
                Watch.listener(
                    r -> onEvents(r, stop),
                    e -> {
                      failure.compareAndSet(null, e);
                      stop.stop();
                    },
                    () -> {
                      failure.compareAndSet(null, new IllegalStateException("watch ended"));
                      stop.stop();
                    }));
    try {
      err().println(
          "watching " + layout.servicePrefix(service) + " from revision " + from
              + " (Ctrl-C to stop)");
      err().flush();
      stop.listen();
      stop.await();
    } finally {
      // Read before closing: closing the watcher completes it, which is not a failure.
      failed = failure.get();
      watcher.close();
    }
    Throwable e = failed;
    if (e != null && (count == null || changes < count)) {
      throw new RegistryException(
          RegistryException.Kind.UNAVAILABLE,
          "watch of " + layout.servicePrefix(service) + " failed: " + e.getMessage(),
          e);
    }
    return SteelyardCli.EXIT_OK;
  }

  private GetResponse list(Client client, ByteSequence prefix) {
    long timeoutMillis = cli().timeout().toMillis();
    var f = client.getKVClient().get(prefix, GetOption.builder().isPrefix(true).build());
    try {
      return f.get(timeoutMillis, TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      f.cancel(true);
      throw new RegistryException(
          RegistryException.Kind.UNAVAILABLE,
          "etcd did not answer within " + timeoutMillis + "ms (list " + service + ")",
          e);
    } catch (java.util.concurrent.ExecutionException e) {
      Throwable cause = e.getCause() != null ? e.getCause() : e;
      throw new RegistryException(
          RegistryException.Kind.UNAVAILABLE,
          "etcd refused list " + service + ": " + cause.getMessage(),
          cause);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new RegistryException(
          RegistryException.Kind.UNAVAILABLE, "interrupted while listing " + service, e);
    }
  }

  // jetcd delivers responses of one watcher in order, on its executor; the lock only orders them
  // against the initial listing above.
  private synchronized void onEvents(WatchResponse response, StopSignal stop) {
    for (WatchEvent event : response.getEvents()) {
      if (count != null && changes >= count) {
        break;
      }
      String line = describe(event);
      if (line != null) {
        print(line);
        changes++;
      }
    }
    out().flush();
    if (count != null && changes >= count) {
      stop.stop();
    }
  }

  @Nullable
  private String describe(WatchEvent event) {
    KeyValue kv = event.getKeyValue();
    String key = kv.getKey().toString(StandardCharsets.UTF_8);
    DecodedValue before = known.get(key);
    switch (event.getEventType()) {
      case PUT -> {
        DecodedValue now = ValueCodec.decode(kv.getValue().getBytes());
        known.put(key, now);
        if (!(now instanceof DecodedValue.Accepted a)) {
          return "malformed " + key + ": " + ((DecodedValue.Rejected) now).reason();
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
      case DELETE -> {
        known.remove(key);
        return "removed "
            + (before instanceof DecodedValue.Accepted b
                ? b.address()
                : layout.instanceId(service, key).orElse(key));
      }
      default -> {
        return null;
      }
    }
  }

  private static String metadataSuffix(DecodedValue.Accepted a) {
    return a.metadata().isEmpty() ? "" : " " + ListCommand.metadataText(a.metadata());
  }

  private void print(String line) {
    out().println(line);
  }
}
