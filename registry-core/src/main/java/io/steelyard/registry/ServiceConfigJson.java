package io.steelyard.registry;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonParseException;
import com.google.gson.Strictness;
import com.google.gson.ToNumberPolicy;
import com.google.gson.reflect.TypeToken;
import io.grpc.Status;
import java.lang.reflect.Type;
import java.util.Map;

/**
 * Reads a gRPC service config as stored under {@link KeyLayout#serviceConfigKey}: one JSON object,
 * into the shape grpc-java's parsers take (maps, lists, strings, {@code Double}s, booleans, as
 * grpc's own JSON parser makes them). It checks the JSON only; whether grpc and the balancer
 * accept the config is {@code NameResolver.ServiceConfigParser}'s question.
 *
 * <pre>{@code
 * Map<String, ?> config = ServiceConfigJson.parse("{\"loadBalancingConfig\":[{\"weighted_random\":{}}]}");
 * }</pre>
 *
 * <p>Thread-safe.
 */
public final class ServiceConfigJson {

  /** The longest config read, in characters: far above any real one, and well below etcd's 1.5 MiB. */
  public static final int MAX_CHARS = 64 * 1024;

  private static final Type MAP = new TypeToken<Map<String, Object>>() {}.getType();

  private static final Gson GSON =
      new GsonBuilder()
          .setStrictness(Strictness.STRICT)
          .setObjectToNumberStrategy(ToNumberPolicy.DOUBLE)
          .create();

  private ServiceConfigJson() {}

  /**
   * The service config in {@code json}.
   *
   * @throws IllegalArgumentException naming the problem in one line, when {@code json} is not one
   *     JSON object
   */
  public static Map<String, ?> parse(String json) {
    if (json == null || json.isBlank()) {
      throw new IllegalArgumentException("service config: empty (expected: a JSON object)");
    }
    if (json.length() > MAX_CHARS) {
      throw new IllegalArgumentException(
          "service config: " + json.length() + " characters (expected: at most " + MAX_CHARS + ")");
    }
    String text = json.strip();
    if (!text.startsWith("{")) {
      throw new IllegalArgumentException(
          "service config: " + Validation.quote(abbreviate(text)) + " (expected: a JSON object)");
    }
    try {
      Map<String, ?> config = GSON.fromJson(text, MAP);
      if (config == null) {
        throw new IllegalArgumentException("service config: empty (expected: a JSON object)");
      }
      return config;
    } catch (JsonParseException e) {
      Throwable cause = e.getCause() != null && e.getCause().getMessage() != null ? e.getCause() : e;
      String why = cause.getMessage() == null ? cause.getClass().getSimpleName() : cause.getMessage();
      // Gson appends a link to its troubleshooting page: not for operators.
      int see = why.indexOf("\nSee ");
      if (see > 0) {
        why = why.substring(0, see);
      }
      throw new IllegalArgumentException("service config is not valid JSON: " + why.strip(), e);
    }
  }

  /**
   * Why a parser refused a service config, in one line: {@code error}'s description (its code
   * when it has none), then its cause's message when it has one. The one wording for {@code
   * steelyard config set|validate} and the resolver's log line about a refused stored config.
   */
  public static String refusal(Status error) {
    String why = error.getDescription() != null ? error.getDescription() : error.getCode().toString();
    Throwable cause = error.getCause();
    if (cause != null && cause.getMessage() != null) {
      why += ": " + cause.getMessage();
    }
    return why;
  }

  private static String abbreviate(String s) {
    return s.length() <= 40 ? s : s.substring(0, 40) + "...";
  }
}
