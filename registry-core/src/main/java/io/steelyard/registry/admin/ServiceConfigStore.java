package io.steelyard.registry.admin;

import static java.util.Objects.requireNonNull;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.ServiceConfigJson;
import io.steelyard.registry.internal.EtcdCalls;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;

/**
 * Reads, checks and writes the gRPC service config operators set for a service's clients, kept
 * under {@link KeyLayout#serviceConfigKey} ({@code <prefix>/.config/<service>}): the one code path
 * behind {@code steelyard config get|set|validate|delete} and any console. Every {@code etcd:}
 * channel of the service receives the stored config from its resolver.
 *
 * <pre>{@code
 * ServiceConfigStore configs = new ServiceConfigStore(client, KeyLayout.defaults(),
 *     Duration.ofSeconds(5), check);   // check: the balancer's parser, see Check
 * configs.set("greeter", "{\"loadBalancingConfig\":[{\"weighted_least_request\":{}}]}");
 * configs.get("greeter").map(StoredConfig::json);
 * }</pre>
 *
 * <p>A config is written only after it passed {@link #validate}: JSON first ({@link
 * ServiceConfigJson}), then the {@link Check} given to the constructor, which is where the
 * balancer's own parser comes in (registry-core knows no balancer). A refused config never
 * reaches etcd.
 *
 * <p>Every method blocks the caller; each etcd call waits at most the configured timeout, and
 * every failure is a {@link RegistryException}. Shares the caller's jetcd {@link Client} and does
 * not close it. Thread-safe.
 */
public final class ServiceConfigStore {

  /**
   * Decides whether grpc and the balancer accept a service config, as a channel would parse it.
   * Implementations never write anything.
   */
  @FunctionalInterface
  public interface Check {
    /** Accepts nothing but JSON syntax: for tools without grpc or the balancer at hand. */
    Check JSON_ONLY = config -> {};

    /**
     * Returns when {@code config} would be accepted.
     *
     * @throws IllegalArgumentException with the parser's one-line reason when it would not
     */
    void check(Map<String, ?> config);
  }

  /** A config as stored: its text and the revision it was written at. */
  public record StoredConfig(String service, String key, String json, long modRevision) {
    public StoredConfig {
      requireNonNull(service, "service");
      requireNonNull(key, "key");
      requireNonNull(json, "json");
    }
  }

  private final Client client;
  private final KeyLayout layout;
  private final EtcdCalls calls;
  private final Check check;

  /**
   * A store over {@code client} (not owned) and {@code layout}; each etcd call waits at most
   * {@code timeout}; configs are written only when {@code check} accepts them.
   */
  public ServiceConfigStore(Client client, KeyLayout layout, Duration timeout, Check check) {
    this.client = requireNonNull(client, "client");
    this.layout = requireNonNull(layout, "layout");
    this.calls = new EtcdCalls(requireNonNull(timeout, "timeout"));
    this.check = requireNonNull(check, "check");
  }

  /** The config stored for {@code service}, if any (as stored: it may be one a client ignores). */
  public Optional<StoredConfig> get(String service) {
    String key = layout.serviceConfigKey(service);
    GetResponse r =
        calls.await("get " + key, () -> client.getKVClient().get(bytes(key), GetOption.DEFAULT));
    if (r.getKvs().isEmpty()) {
      return Optional.empty();
    }
    KeyValue kv = r.getKvs().get(0);
    return Optional.of(new StoredConfig(
        service, key, kv.getValue().toString(StandardCharsets.UTF_8), kv.getModRevision()));
  }

  /**
   * Checks {@code json} as {@link #set} does, without writing it; returns the parsed config.
   *
   * @throws IllegalArgumentException with a one-line reason when it is refused
   */
  public Map<String, ?> validate(String json) {
    return validateWith(json, check);
  }

  /**
   * Checks {@code json} as a store with {@code check} would, without etcd: for {@code validate}
   * commands. Returns the parsed config.
   *
   * @throws IllegalArgumentException with a one-line reason when it is refused
   */
  public static Map<String, ?> validateWith(String json, Check check) {
    Map<String, ?> config = ServiceConfigJson.parse(json);
    check.check(config);
    return config;
  }

  /**
   * Stores {@code json} as {@code service}'s config after {@link #validate}, replacing any; it
   * takes no lease (a config outlives every server) and is written as given.
   *
   * @throws IllegalArgumentException when the service name or the config is refused (nothing
   *     written)
   * @throws RegistryException when etcd fails
   */
  public StoredConfig set(String service, String json) {
    String key = layout.serviceConfigKey(service);
    validate(json);
    var r = calls.await(
        "put " + key, () -> client.getKVClient().put(bytes(key), bytes(json), PutOption.DEFAULT));
    return new StoredConfig(service, key, json, r.getHeader().getRevision());
  }

  /**
   * Deletes {@code service}'s config: its {@code etcd:} channels go back to the resolver's
   * fallback ({@code weighted_random} unless a channel set {@code FALLBACK_SERVICE_CONFIG}), which
   * outranks a channel's own default service config (see docs/balancer.md). Returns whether there
   * was one.
   */
  public boolean delete(String service) {
    String key = layout.serviceConfigKey(service);
    return calls.await(
            "delete " + key, () -> client.getKVClient().delete(bytes(key), DeleteOption.DEFAULT))
        .getDeleted() > 0;
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }
}
