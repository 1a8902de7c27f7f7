package io.steelyard.stork;

import com.google.common.collect.ImmutableSortedSet;
import io.smallrye.stork.utils.DurationUtils;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.Localities;
import io.steelyard.registry.Validation;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Map;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;
import javax.annotation.Nullable;

/**
 * Reads the attributes of one provider of one Stork service, each checked at Stork's
 * initialisation: a bad value fails it with one line naming the service, the provider, the
 * attribute and what was expected, e.g. {@code Stork service 'greeter', service-discovery
 * 'steelyard': endpoints: 'ftp://h:2379' (expected: http(s)://host:port)}. The etcd attributes
 * mean what the CLI's flags of the same names mean ({@code docs/cli.md}).
 *
 * <p>Stateless apart from what it names in its messages.
 */
final class Attributes {

  /** The etcd attributes every steelyard provider takes, as the CLI's flags. */
  static final Set<String> ETCD =
      ImmutableSortedSet.of("endpoints", "prefix", "user", "cacert", "cert", "key");

  /** What Stork's integrations may pass besides a provider's own attributes: Quarkus passes the type. */
  private static final Set<String> STORK = Set.of("type");

  private final String where;
  private final Map<String, String> parameters;

  /**
   * @param service the Stork service
   * @param provider what is configured, e.g. {@code service-discovery 'steelyard'}
   */
  Attributes(String service, String provider, Map<String, String> parameters) {
    this.where = "Stork service '" + service + "', " + provider;
    this.parameters = parameters;
  }

  /** {@code problem}, which starts with the attribute's name, as the one line Stork fails with. */
  IllegalArgumentException bad(String problem, @Nullable Throwable cause) {
    return new IllegalArgumentException(where + ": " + problem, cause);
  }

  /**
   * Refuses any attribute outside {@code known} (a misspelt one would be ignored in silence);
   * {@code hint} says why one that other providers take is not needed here, or is null.
   */
  void checkKnown(Set<String> known, Map<String, String> hints) {
    for (String name : new TreeSet<>(parameters.keySet())) {
      if (!known.contains(name) && !STORK.contains(name)) {
        String hint = hints.get(name);
        SortedSet<String> sorted = new TreeSet<>(known);
        throw bad(name + ": not an attribute of this provider (expected one of " + sorted + ")"
            + (hint == null ? "" : "; " + hint), null);
      }
    }
  }

  /** The etcd connection of {@code endpoints} (else $STEELYARD_ETCD_ENDPOINTS, else the default), {@code user}, {@code cacert}, {@code cert} and {@code key}. */
  EtcdConnection connection(
      @Nullable String endpoints, @Nullable String user, @Nullable String cacert,
      @Nullable String cert, @Nullable String key) {
    EtcdConnection.Builder b = EtcdConnection.builder();
    String list = blank(endpoints) ? EtcdConnection.endpointsFrom(System.getenv()) : endpoints;
    try {
      b.endpoints(list);
    } catch (IllegalArgumentException e) {
      throw bad(e.getMessage(), e);
    }
    if (!blank(user)) {
      try {
        b.userPassword(user);
      } catch (IllegalArgumentException e) {
        // Never echo the password.
        throw bad("user: (not shown) (expected: USER:PASSWORD)", null);
      }
    }
    Path ca = readable("cacert", cacert);
    Path certPath = readable("cert", cert);
    Path keyPath = readable("key", key);
    if ((certPath == null) != (keyPath == null)) {
      throw bad((certPath == null ? "key" : "cert") + ": set alone (expected: cert and key together, with cacert)", null);
    }
    if (ca == null && certPath != null) {
      throw bad("cert: set without cacert (expected: cacert, the CA that signed etcd's certificate)", null);
    }
    if (ca != null) {
      b.tls(ca, certPath, keyPath);
    }
    return b.build();
  }

  @Nullable
  private Path readable(String name, @Nullable String value) {
    if (blank(value)) {
      return null;
    }
    Path p = Path.of(value);
    if (!Files.isReadable(p)) {
      throw bad(name + ": " + Validation.quote(value) + " (expected: a readable PEM file)", null);
    }
    return p;
  }

  /** The key layout of {@code prefix} ({@code /services} when blank). */
  KeyLayout layout(@Nullable String prefix) {
    try {
      return blank(prefix) ? KeyLayout.defaults() : KeyLayout.of(prefix);
    } catch (IllegalArgumentException e) {
      throw bad(e.getMessage(), e);
    }
  }

  /** A zone or region name, or null when blank. */
  @Nullable
  String locality(String name, @Nullable String value) {
    if (blank(value)) {
      return null;
    }
    try {
      return Localities.checkName(name, value);
    } catch (IllegalArgumentException e) {
      throw bad(e.getMessage(), e);
    }
  }

  /** {@code true} or {@code false}; {@code fallback} when blank. */
  boolean bool(String name, @Nullable String value, boolean fallback) {
    if (blank(value)) {
      return fallback;
    }
    if (value.equalsIgnoreCase("true") || value.equalsIgnoreCase("false")) {
      return Boolean.parseBoolean(value);
    }
    throw bad(name + ": " + Validation.quote(value) + " (expected: true or false)", null);
  }

  /** An integer in {@code min..max}; {@code fallback} when blank. */
  int integer(String name, @Nullable String value, int min, int max, int fallback) {
    if (blank(value)) {
      return fallback;
    }
    try {
      int v = Integer.parseInt(value.trim());
      if (v >= min && v <= max) {
        return v;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw bad(name + ": " + Validation.quote(value) + " (expected: an integer " + min + ".." + max + ")", null);
  }

  /** A number in {@code (0, max]}; {@code fallback} when blank. */
  double positive(String name, @Nullable String value, double max, double fallback) {
    if (blank(value)) {
      return fallback;
    }
    try {
      double v = Double.parseDouble(value.trim());
      if (v > 0 && v <= max) {
        return v;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw bad(name + ": " + Validation.quote(value) + " (expected: a number > 0 and <= " + max + ")", null);
  }

  /**
   * A duration as Stork's own attributes read one ({@code 30} is seconds, else ISO-8601 without
   * {@code PT}: {@code 30S}, {@code 5M}, {@code 1.5S}); null when blank.
   */
  @Nullable
  Duration duration(String name, @Nullable String value, Duration min) {
    if (blank(value)) {
      return null;
    }
    Duration d;
    try {
      d = DurationUtils.parseDuration(value.trim(), name);
    } catch (DateTimeParseException | IllegalArgumentException e) {
      throw bad(name + ": " + Validation.quote(value) + " (expected: a duration like 30S, 2M or 30)", e);
    }
    if (d.compareTo(min) < 0) {
      throw bad(name + ": " + Validation.quote(value) + " (expected: at least " + min.toMillis() + " ms)", null);
    }
    return d;
  }

  static boolean blank(@Nullable String s) {
    return s == null || s.isBlank();
  }
}
