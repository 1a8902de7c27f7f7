package io.steelyard.cli;

import com.google.gson.stream.JsonWriter;
import io.steelyard.agent.ServerMeters;
import io.steelyard.agent.ServerMeters.Scrape;
import io.steelyard.registry.DecodedValue;
import io.steelyard.registry.admin.InstanceStore;
import io.steelyard.registry.admin.RegisteredInstance;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import javax.annotation.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(
    name = "top",
    mixinStandardHelpOptions = true,
    description = {
      "Show SERVICE's instances live: weight, calls/s, p99, errors.",
      "Refreshed every --interval: address, weight, registered/drained, calls per",
      "second, p99 latency and error rate per instance, read from the metrics URL each",
      "instance advertises (metadata key 'metrics', as greeter-server --metrics-port",
      "does). Instances without one show their registry columns only. Ctrl-C stops it."
    },
    footer = {
      "",
      "Examples:",
      "  steelyard top greeter",
      "  steelyard top greeter --once --output json"
    })
final class TopCommand extends CliCommand {

  enum Output {
    table,
    json
  }

  @Parameters(index = "0", paramLabel = "SERVICE", description = "Service name, e.g. greeter.")
  String service;

  @Option(names = "--once", description = "Print one view (two scrapes --interval apart) and exit.")
  boolean once;

  @Option(
      names = "--interval",
      paramLabel = "DURATION",
      defaultValue = "1s",
      converter = DurationConverter.class,
      description = "Time between refreshes, and the window rates are measured over (default: 1s).")
  Duration interval;

  @Option(
      names = {"-o", "--output"},
      paramLabel = "FORMAT",
      defaultValue = "table",
      description = "table or json (default: ${DEFAULT-VALUE}).")
  Output output = Output.table;

  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

  @Override
  public Integer call() {
    checkService(service);
    if (interval.compareTo(Duration.ofMillis(100)) < 0) {
      throw new picocli.CommandLine.ParameterException(spec.commandLine(),
          "--interval: " + DurationConverter.format(interval) + " (expected: >= 100ms)");
    }
    InstanceStore store = store();
    Map<String, Scrape> previous = scrapeAll(store.list(service, false));
    StopSignal stop = cli().stopSignal();
    if (!once) {
      stop.listen();
    }
    while (true) {
      if (stop.await(interval)) {
        return ExitCodes.OK;
      }
      List<RegisteredInstance> instances = store.list(service, false);
      Map<String, Scrape> now = scrapeAll(instances);
      List<Row> rows = rows(instances, previous, now);
      PrintWriter out = out();
      if (output == Output.json) {
        out.println(json(rows));
      } else {
        if (!once) {
          out.print("\033[H\033[2J"); // home and clear, as top(1)
        }
        out.print(table(rows));
      }
      out.flush();
      if (once) {
        return ExitCodes.OK;
      }
      previous = now;
    }
  }

  /** One line of the view. */
  record Row(String address, int weight, boolean drained, @Nullable String metricsUrl,
      double callsPerSecond, double p99Seconds, double errorRate, @Nullable String note) {}

  private Map<String, Scrape> scrapeAll(List<RegisteredInstance> instances) {
    Map<String, Scrape> out = new HashMap<>();
    for (RegisteredInstance i : instances) {
      if (i.value() instanceof DecodedValue.Accepted a && a.metadata().get(ServerMeters.METADATA_KEY) != null) {
        out.put(a.address(), scrape(a.metadata().get(ServerMeters.METADATA_KEY)));
      }
    }
    return out;
  }

  private Scrape scrape(String url) {
    long at = System.nanoTime();
    String text;
    try {
      HttpResponse<String> r = http.send(
          HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(2)).GET().build(),
          HttpResponse.BodyHandlers.ofString());
      if (r.statusCode() != 200) {
        return Scrape.failed(at, "HTTP " + r.statusCode());
      }
      text = r.body();
    } catch (IOException | IllegalArgumentException e) {
      return Scrape.failed(at, "unreachable");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Scrape.failed(at, "interrupted");
    }
    return ServerMeters.read(at, service, text);
  }

  static List<Row> rows(
      List<RegisteredInstance> instances, Map<String, Scrape> before, Map<String, Scrape> after) {
    List<Row> rows = new ArrayList<>();
    for (RegisteredInstance i : instances) {
      if (!(i.value() instanceof DecodedValue.Accepted a)) {
        continue;
      }
      String url = a.metadata().get(ServerMeters.METADATA_KEY);
      Scrape s0 = before.get(a.address());
      Scrape s1 = after.get(a.address());
      boolean drained = a.weight() == 0;
      if (url == null || s1 == null) {
        rows.add(new Row(a.address(), a.weight(), drained, null, Double.NaN, Double.NaN, Double.NaN,
            url == null ? "no metrics URL" : null));
      } else if (s1.error() != null || s0 == null || s0.error() != null) {
        rows.add(new Row(a.address(), a.weight(), drained, url, Double.NaN, Double.NaN, Double.NaN,
            s1.error() != null ? s1.error() : "first scrape"));
      } else {
        double seconds = Math.max(1e-3, (s1.atNanos() - s0.atNanos()) / 1e9);
        double calls = Math.max(0, s1.calls() - s0.calls());
        double errors = Math.max(0, s1.errors() - s0.errors());
        rows.add(new Row(a.address(), a.weight(), drained, url, calls / seconds,
            quantile(0.99, s0.buckets(), s1.buckets()), calls == 0 ? 0 : errors / calls, null));
      }
    }
    return rows;
  }

  /** The {@code q} quantile of the calls between two scrapes of a cumulative histogram. */
  static double quantile(double q, TreeMap<Double, Double> before, TreeMap<Double, Double> after) {
    return ServerMeters.quantile(q, ServerMeters.deltas(before, after));
  }

  private String table(List<Row> rows) {
    StringBuilder sb = new StringBuilder();
    sb.append(String.format(Locale.ROOT, "%s: %d instances, rates over %s%n",
        service, rows.size(), DurationConverter.format(interval)));
    sb.append(String.format(Locale.ROOT, "%-24s %7s %-10s %9s %9s %7s  %s%n",
        "ADDRESS", "WEIGHT", "STATE", "CALLS/S", "P99", "ERRORS", "NOTE"));
    for (Row r : rows) {
      sb.append(String.format(Locale.ROOT, "%-24s %7d %-10s %9s %9s %7s  %s%n",
          r.address(), r.weight(), r.drained() ? "drained" : "registered",
          Double.isNaN(r.callsPerSecond()) ? "-" : String.format(Locale.ROOT, "%.1f", r.callsPerSecond()),
          Double.isNaN(r.p99Seconds()) ? "-" : millis(r.p99Seconds()),
          Double.isNaN(r.errorRate()) ? "-" : String.format(Locale.ROOT, "%.1f%%", r.errorRate() * 100),
          r.note() == null ? "" : r.note()));
    }
    return sb.toString();
  }

  private static String millis(double seconds) {
    return String.format(Locale.ROOT, "%.1fms", seconds * 1000);
  }

  private String json(List<Row> rows) {
    StringWriter text = new StringWriter();
    try (JsonWriter w = new JsonWriter(text)) {
      w.beginObject();
      w.name("service").value(service);
      w.name("intervalMillis").value(interval.toMillis());
      w.name("instances").beginArray();
      for (Row r : rows) {
        w.beginObject();
        w.name("address").value(r.address());
        w.name("weight").value(r.weight());
        w.name("state").value(r.drained() ? "drained" : "registered");
        w.name("metricsUrl").value(r.metricsUrl());
        number(w.name("callsPerSecond"), r.callsPerSecond());
        number(w.name("p99Seconds"), r.p99Seconds());
        number(w.name("errorRate"), r.errorRate());
        w.name("note").value(r.note());
        w.endObject();
      }
      w.endArray();
      w.endObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return text.toString();
  }

  /** NaN (nothing measured) is written as null: JSON has no NaN. */
  private static void number(JsonWriter w, double v) throws IOException {
    if (Double.isNaN(v) || Double.isInfinite(v)) {
      w.nullValue();
    } else {
      w.value(v);
    }
  }
}
