package io.steelyard.cli;

import com.google.gson.stream.JsonWriter;
import io.steelyard.registry.DecodedValue;
import io.steelyard.registry.admin.RegisteredInstance;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(
    name = "list",
    mixinStandardHelpOptions = true,
    description = {
      "List the instances of SERVICE.",
      "Shows address, weight, lease (hex, as etcdctl), TTL left, value format",
      "and metadata. Keys whose value cannot be read are listed as 'malformed'",
      "with the reason, not hidden."
    },
    footer = {
      "",
      "Examples:",
      "  steelyard list greeter",
      "  steelyard list greeter --output json"
    })
final class ListCommand extends CliCommand {

  enum Output {
    table,
    json
  }

  @Parameters(index = "0", paramLabel = "SERVICE", description = "Service name, e.g. greeter.")
  String service;

  @Option(
      names = {"-o", "--output"},
      paramLabel = "FORMAT",
      defaultValue = "table",
      description = {"table or json (default: ${DEFAULT-VALUE}).", "Example: --output json"})
  Output output = Output.table;

  @Override
  public Integer call() {
    checkService(service);
    List<RegisteredInstance> instances = store().list(service, true);
    if (output == Output.json) {
      printJson(out(), instances);
    } else {
      printTable(out(), instances);
    }
    return ExitCodes.OK;
  }

  private void printTable(PrintWriter out, List<RegisteredInstance> instances) {
    if (instances.isEmpty()) {
      out.println("no instances of " + service);
      return;
    }
    List<String[]> rows = new ArrayList<>();
    rows.add(new String[] {"ADDRESS", "WEIGHT", "LEASE", "TTL", "FORMAT", "METADATA"});
    for (RegisteredInstance i : instances) {
      if (i.value() instanceof DecodedValue.Accepted a) {
        rows.add(
            new String[] {
              a.address(),
              weightText(a.weight(), i.drainedFromWeight()),
              leaseText(i.leaseId()),
              ttlText(i),
              a.format().name().toLowerCase(Locale.ROOT),
              metadataText(a.metadata())
            });
      } else {
        rows.add(
            new String[] {
              i.instanceId(),
              "-",
              leaseText(i.leaseId()),
              ttlText(i),
              "malformed",
              ((DecodedValue.Rejected) i.value()).reason()
            });
      }
    }
    int[] width = new int[rows.get(0).length];
    for (String[] row : rows) {
      for (int c = 0; c < row.length; c++) {
        width[c] = Math.max(width[c], row[c].length());
      }
    }
    for (String[] row : rows) {
      StringBuilder b = new StringBuilder();
      for (int c = 0; c < row.length; c++) {
        b.append(row[c]);
        if (c < row.length - 1) {
          b.append(" ".repeat(width[c] - row[c].length() + 2));
        }
      }
      out.println(b.toString().stripTrailing());
    }
  }

  /**
   * One instance per line inside the document, as {@code docs/cli.md} shows, so the output reads
   * well and still parses; every value is written (and escaped) by Gson's {@link JsonWriter}.
   */
  private void printJson(PrintWriter out, List<RegisteredInstance> instances) {
    StringBuilder b = new StringBuilder();
    b.append("{\"service\":").append(json(w -> w.value(service))).append(",\"instances\":[");
    for (int i = 0; i < instances.size(); i++) {
      RegisteredInstance instance = instances.get(i);
      b.append(i == 0 ? "\n  " : ",\n  ").append(json(w -> writeInstance(w, instance)));
    }
    b.append(instances.isEmpty() ? "]}" : "\n]}");
    out.println(b);
  }

  private static void writeInstance(JsonWriter w, RegisteredInstance i) throws IOException {
    w.beginObject().name("key").value(i.key());
    if (i.value() instanceof DecodedValue.Accepted a) {
      w.name("address").value(a.address());
      w.name("weight").value(a.weight());
      if (i.drainedFromWeight() >= 0) {
        w.name("drainedFromWeight").value(i.drainedFromWeight());
      }
      w.name("leaseId").value(i.leaseId());
      w.name("ttlSeconds").value(i.ttlSeconds());
      w.name("format").value(a.format().name().toLowerCase(Locale.ROOT));
      w.name("metadata").beginObject();
      for (Map.Entry<String, String> e : a.metadata().entrySet()) {
        w.name(e.getKey()).value(e.getValue());
      }
      w.endObject();
    } else {
      w.name("malformed").value(true);
      w.name("reason").value(((DecodedValue.Rejected) i.value()).reason());
      w.name("leaseId").value(i.leaseId());
      w.name("ttlSeconds").value(i.ttlSeconds());
    }
    w.endObject();
  }

  private interface JsonBody {
    void write(JsonWriter w) throws IOException;
  }

  /** Compact JSON text of what {@code body} writes. */
  private static String json(JsonBody body) {
    StringWriter text = new StringWriter();
    try (JsonWriter w = new JsonWriter(text)) {
      body.write(w);
    } catch (IOException e) {
      throw new UncheckedIOException(e); // a StringWriter does not fail
    }
    return text.toString();
  }

  /** {@code 5}, or {@code 0 (drained from 5)} when drain remembered the weight. */
  static String weightText(int weight, int drainedFrom) {
    return weight == 0 && drainedFrom >= 0
        ? "0 (drained from " + drainedFrom + ")"
        : Integer.toString(weight);
  }

  /** etcdctl prints lease ids in hex; so do we, so they can be pasted into {@code etcdctl lease}. */
  static String leaseText(long leaseId) {
    return leaseId == 0 ? "none" : Long.toHexString(leaseId);
  }

  private static String ttlText(RegisteredInstance i) {
    if (i.leaseId() == 0) {
      return "-";
    }
    return i.ttlSeconds() >= 0 ? i.ttlSeconds() + "s" : "expired";
  }

  static String metadataText(Map<String, String> metadata) {
    return metadata.isEmpty()
        ? "-"
        : metadata.entrySet().stream()
            .map(e -> e.getKey() + "=" + e.getValue())
            .collect(Collectors.joining(","));
  }
}
