package io.steelyard.xds;

import static java.util.Objects.requireNonNull;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import com.google.gson.Strictness;
import com.google.gson.stream.JsonReader;
import java.io.StringReader;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Which services each client identity may read: the parsed {@code --authorize} file,
 *
 * <pre>{@code
 * {"grants": [{"identity": "spiffe://example/greeter-client", "services": ["greeter", "billing-*"]}]}
 * }</pre>
 *
 * <p>An identity or a service name may hold {@code *}, which matches any run of characters
 * ({@code spiffe://example/*}, {@code billing-*}). An identity may read a service when any grant
 * whose identity matches it names the service; an identity no grant matches reads nothing.
 *
 * <p>Immutable and thread-safe.
 */
final class Grants {

  private record Grant(String identity, Pattern identityPattern, List<Pattern> services) {}

  private final List<Grant> grants;

  private Grants(List<Grant> grants) {
    this.grants = List.copyOf(grants);
  }

  /**
   * Parses a grants file's contents.
   *
   * @throws IllegalArgumentException saying what is wrong and where: the line and column of a
   *     syntax error, the grant of a missing or mistyped field
   */
  static Grants parse(String json) {
    JsonElement root;
    try {
      JsonReader reader = new JsonReader(new StringReader(json));
      reader.setStrictness(Strictness.STRICT);
      root = JsonParser.parseReader(reader);
    } catch (JsonParseException e) {
      Throwable cause = e.getCause() != null ? e.getCause() : e;
      throw new IllegalArgumentException(firstLine(cause.getMessage()), e);
    }
    if (!root.isJsonObject() || !root.getAsJsonObject().has("grants")
        || !root.getAsJsonObject().get("grants").isJsonArray()) {
      throw new IllegalArgumentException("expected {\"grants\": [{\"identity\": ..., \"services\": [...]}]}");
    }
    JsonArray array = root.getAsJsonObject().getAsJsonArray("grants");
    List<Grant> grants = new ArrayList<>();
    for (int i = 0; i < array.size(); i++) {
      String where = "grants[" + i + "]";
      if (!array.get(i).isJsonObject()) {
        throw new IllegalArgumentException(where + ": expected an object with identity and services");
      }
      JsonObject g = array.get(i).getAsJsonObject();
      String identity = string(g.get("identity"), where + ".identity");
      if (!g.has("services") || !g.get("services").isJsonArray()) {
        throw new IllegalArgumentException(where + ".services: expected a list of service names or globs");
      }
      List<Pattern> services = new ArrayList<>();
      JsonArray names = g.getAsJsonArray("services");
      for (int j = 0; j < names.size(); j++) {
        services.add(glob(string(names.get(j), where + ".services[" + j + "]")));
      }
      grants.add(new Grant(identity, glob(identity), services));
    }
    return new Grants(grants);
  }

  private static String string(JsonElement e, String where) {
    if (e == null || !e.isJsonPrimitive() || !e.getAsJsonPrimitive().isString() || e.getAsString().isEmpty()) {
      throw new IllegalArgumentException(where + ": expected a non-empty string");
    }
    return e.getAsString();
  }

  private static String firstLine(String message) {
    int nl = message.indexOf('\n');
    return nl < 0 ? message : message.substring(0, nl);
  }

  /** {@code *} matches any run of characters; everything else matches itself. */
  static Pattern glob(String glob) {
    StringBuilder regex = new StringBuilder();
    int start = 0;
    for (int star = glob.indexOf('*'); star >= 0; star = glob.indexOf('*', start)) {
      regex.append(Pattern.quote(glob.substring(start, star))).append(".*");
      start = star + 1;
    }
    regex.append(Pattern.quote(glob.substring(start)));
    return Pattern.compile(regex.toString(), Pattern.DOTALL);
  }

  /** Whether {@code identity} may read {@code service}. */
  boolean allows(String identity, String service) {
    requireNonNull(identity, "identity");
    for (Grant g : grants) {
      if (g.identityPattern().matcher(identity).matches()) {
        for (Pattern s : g.services()) {
          if (s.matcher(service).matches()) {
            return true;
          }
        }
      }
    }
    return false;
  }

  int size() {
    return grants.size();
  }
}
