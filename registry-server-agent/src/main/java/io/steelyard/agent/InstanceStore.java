package io.steelyard.agent;

import static java.util.Objects.requireNonNull;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.LeaseOption;
import io.etcd.jetcd.options.PutOption;
import io.steelyard.registry.DecodedValue;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.ServiceInstance;
import io.steelyard.registry.Validation;
import io.steelyard.registry.ValueCodec;
import io.steelyard.registry.ValueFormat;
import io.steelyard.registry.internal.EtcdCalls;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * Reads and rewrites registered instances: the one code path behind the agent's runtime weight
 * updates and the CLI's {@code list}, {@code weight}, {@code drain}, {@code undrain} and {@code
 * deregister}.
 *
 * <p>Every rewrite keeps the key's <em>current</em> lease and is guarded by its mod revision in a
 * transaction, so it can never leave an orphan key that outlives its server (jetcd has no {@code
 * ignore_lease}), and a concurrent change makes it fail with {@link RegistryException.Kind#CONFLICT}
 * instead of being lost. A rewrite keeps the value's format: a value written by Go's etcd naming
 * manager stays that JSON (a plain {@code host:port} value becomes pipe, the simplest format that
 * can carry a weight).
 *
 * <p>{@code drain} remembers the weight it replaced in a note key {@code
 * <prefix>/.drained/<service>/<address>} on the same lease (so it expires with the instance;
 * {@code .drained} can never be a service name), which {@code undrain} restores.
 *
 * <p>Two forms: the {@code ...Async} methods (the agent's) return at once and complete on a
 * jetcd or timer thread; the others (the CLI's) block the caller. Either way each etcd call waits
 * at most the configured timeout and then fails with {@link RegistryException.Kind#UNAVAILABLE};
 * a refusal (permission, authentication, TLS, a limit) fails at once with its own kind; every
 * failure is a {@link RegistryException}. Thread-safe. Does not own the client.
 *
 * <pre>{@code
 * InstanceStore store = new InstanceStore(client, KeyLayout.defaults(), Duration.ofSeconds(5));
 * store.setWeight("greeter", "10.0.0.7:50051", 8);                 // blocks
 * store.setWeightAsync("greeter", "10.0.0.7:50051", 8).thenRun(...); // does not
 * }</pre>
 */
public final class InstanceStore {

  /** Default time to wait for etcd per call, in milliseconds: {@value}. */
  public static final long DEFAULT_TIMEOUT_MILLIS = 5_000;

  private static final String DRAINED_SEGMENT = "/.drained/";

  private final Client client;
  private final KeyLayout layout;
  private final EtcdCalls calls;

  public InstanceStore(Client client, KeyLayout layout, Duration timeout) {
    this.client = requireNonNull(client, "client");
    this.layout = requireNonNull(layout, "layout");
    this.calls = new EtcdCalls(timeout);
  }

  public KeyLayout layout() {
    return layout;
  }

  /**
   * Every key under {@code service}'s prefix, malformed ones included (as {@link
   * DecodedValue.Rejected}), sorted by key. With {@code withTtl}, asks etcd for each lease's time
   * to live (one call per distinct lease).
   */
  public List<RegisteredInstance> list(String service, boolean withTtl) {
    String prefix = layout.servicePrefix(service);
    GetResponse r =
        await(
            () -> client.getKVClient()
                .get(bytes(prefix), GetOption.builder().isPrefix(true).build()),
            "list " + service);
    Map<String, Integer> notes = drainNotes(service);
    Map<Long, Long> ttls = new HashMap<>();
    List<RegisteredInstance> out = new ArrayList<>(r.getKvs().size());
    for (KeyValue kv : r.getKvs()) {
      long ttl = -1;
      if (withTtl && kv.getLease() != 0) {
        ttl = ttls.computeIfAbsent(kv.getLease(), this::ttlOf);
      }
      out.add(toInstance(service, kv, ttl, notes));
    }
    return out;
  }

  /** The instance registered at {@code <prefix>/<service>/<address>}, if any. */
  public Optional<RegisteredInstance> get(String service, String address) {
    return EtcdCalls.join("get " + address, getAsync(service, address));
  }

  /** {@link #get}, without blocking. */
  public CompletableFuture<Optional<RegisteredInstance>> getAsync(String service, String address) {
    String key = layout.instanceKey(service, address);
    String noteKey = drainNoteKey(service, address);
    return calls.call(
            "get " + key,
            () ->
                client.getKVClient()
                    .txn()
                    .Then(
                        Op.get(bytes(key), GetOption.DEFAULT),
                        Op.get(bytes(noteKey), GetOption.DEFAULT))
                    .commit())
        .thenApply(
            r -> {
              List<KeyValue> kvs = r.getGetResponses().get(0).getKvs();
              if (kvs.isEmpty()) {
                return Optional.empty();
              }
              Map<String, Integer> notes = new HashMap<>();
              for (KeyValue note : r.getGetResponses().get(1).getKvs()) {
                parseNote(note).ifPresent(w -> notes.put(key, w));
              }
              return Optional.of(toInstance(service, kvs.get(0), -1, notes));
            });
  }

  /** Like {@link #get}, but a missing key is {@link RegistryException.Kind#NOT_REGISTERED}. */
  public RegisteredInstance require(String service, String address) {
    return EtcdCalls.join("get " + address, requireAsync(service, address));
  }

  /** {@link #require}, without blocking. */
  public CompletableFuture<RegisteredInstance> requireAsync(String service, String address) {
    return getAsync(service, address)
        .thenApply(found -> found.orElseThrow(() -> notRegistered(service, address)));
  }

  /** The NOT_REGISTERED failure for an instance whose key does not exist. */
  public RegistryException notRegistered(String service, String address) {
    return new RegistryException(
        RegistryException.Kind.NOT_REGISTERED,
        address + " is not registered under " + service
            + " (no key " + layout.instanceKey(service, address) + ")",
        null);
  }

  /** Reads the instance and sets its weight, keeping lease and format. */
  public RegisteredInstance setWeight(String service, String address, int weight) {
    return EtcdCalls.join("set the weight of " + address, setWeightAsync(service, address, weight));
  }

  /** {@link #setWeight(String, String, int)}, without blocking. */
  public CompletableFuture<RegisteredInstance> setWeightAsync(
      String service, String address, int weight) {
    Validation.checkWeight(weight);
    return requireAsync(service, address).thenCompose(current -> setWeightAsync(current, weight));
  }

  /**
   * Sets the weight of {@code current}, provided the key has not changed since it was read (its
   * mod revision still equals {@code current.modRevision()}). An explicit weight ends a drain, so
   * the drain note is removed.
   */
  public RegisteredInstance setWeight(RegisteredInstance current, int weight) {
    return EtcdCalls.join("set the weight of " + current.key(), setWeightAsync(current, weight));
  }

  /** {@link #setWeight(RegisteredInstance, int)}, without blocking. */
  public CompletableFuture<RegisteredInstance> setWeightAsync(RegisteredInstance current, int weight) {
    Validation.checkWeight(weight);
    String noteKey = drainNoteKey(current);
    return rewrite(current, weight, -1, Op.delete(bytes(noteKey), DeleteOption.DEFAULT));
  }

  /** Sets the weight to 0, remembering the weight it had. Draining a drained instance is a no-op. */
  public RegisteredInstance drain(String service, String address) {
    return drain(require(service, address));
  }

  /** {@link #drain(String, String)} of an instance already read, guarded by its mod revision. */
  public RegisteredInstance drain(RegisteredInstance current) {
    DecodedValue.Accepted value = current.acceptedOrThrow();
    if (value.weight() == 0) {
      return current;
    }
    String noteKey = drainNoteKey(current);
    Op note =
        Op.put(
            bytes(noteKey),
            bytes(Integer.toString(value.weight())),
            leaseOption(current.leaseId()));
    return EtcdCalls.join("drain " + current.key(), rewrite(current, 0, value.weight(), note));
  }

  /**
   * Restores a drained instance: to {@code weight} when given, else to the weight recorded by
   * {@link #drain}, else to {@value Validation#DEFAULT_WEIGHT}. Without {@code weight}, an instance
   * that is not drained (weight above 0) is returned unchanged.
   */
  public RegisteredInstance undrain(String service, String address, OptionalInt weight) {
    return undrain(require(service, address), weight);
  }

  /** {@link #undrain(String, String, OptionalInt)} of an instance already read. */
  public RegisteredInstance undrain(RegisteredInstance current, OptionalInt weight) {
    if (weight.isEmpty() && current.acceptedOrThrow().weight() != 0) {
      // Not drained: falling back to the default weight here would silently cut its traffic.
      return current;
    }
    int restored =
        weight.orElse(
            current.drainedFromWeight() >= 0
                ? current.drainedFromWeight()
                : Validation.DEFAULT_WEIGHT);
    return setWeight(current, restored);
  }

  /** Deletes the instance's key (and its drain note). Returns whether the key existed. */
  public boolean delete(String service, String address) {
    String key = layout.instanceKey(service, address);
    TxnResponse r =
        await(
            () -> client.getKVClient()
                .txn()
                .Then(
                    Op.delete(bytes(key), DeleteOption.DEFAULT),
                    Op.delete(bytes(drainNoteKey(service, address)), DeleteOption.DEFAULT))
                .commit(),
            "delete " + key);
    return r.getDeleteResponses().get(0).getDeleted() > 0;
  }

  /** Writes {@code weight} (and {@code extra}) if the key is still as read; never blocks. */
  private CompletableFuture<RegisteredInstance> rewrite(
      RegisteredInstance current, int weight, int drainedFrom, Op extra) {
    DecodedValue.Accepted value;
    try {
      value = current.acceptedOrThrow();
    } catch (RegistryException malformed) {
      return CompletableFuture.failedFuture(malformed);
    }
    ValueFormat format = value.format().forWeight(weight);
    ServiceInstance updated =
        new ServiceInstance(current.service(), value.address(), weight, value.metadata());
    byte[] encoded = ValueCodec.encode(updated, format);
    ByteSequence key = bytes(current.key());
    return calls.call(
            "update " + current.key(),
            () ->
                client.getKVClient()
                    .txn()
                    .If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.modRevision(current.modRevision())))
                    .Then(
                        Op.put(key, ByteSequence.from(encoded), leaseOption(current.leaseId())),
                        extra)
                    .commit())
        .thenApply(
            r -> {
              if (!r.isSucceeded()) {
                throw new RegistryException(
                    RegistryException.Kind.CONFLICT,
                    current.key() + " changed since it was read (mod revision "
                        + current.modRevision() + "); nothing written, read it again",
                    null);
              }
              return new RegisteredInstance(
                  current.service(),
                  current.key(),
                  current.instanceId(),
                  new DecodedValue.Accepted(value.address(), weight, value.metadata(), format),
                  current.leaseId(),
                  r.getHeader().getRevision(),
                  -1,
                  drainedFrom);
            });
  }

  private static PutOption leaseOption(long leaseId) {
    // A key written without a lease (etcdctl put) stays without one: we never add or drop a lease.
    return leaseId == 0 ? PutOption.DEFAULT : PutOption.builder().withLeaseId(leaseId).build();
  }

  private RegisteredInstance toInstance(
      String service, KeyValue kv, long ttl, Map<String, Integer> notes) {
    String key = kv.getKey().toString(StandardCharsets.UTF_8);
    String id = layout.instanceId(service, key).orElse(key);
    return new RegisteredInstance(
        service,
        key,
        id,
        ValueCodec.decode(kv.getValue().getBytes()),
        kv.getLease(),
        kv.getModRevision(),
        ttl,
        notes.getOrDefault(key, -1));
  }

  /** Drain notes of {@code service}, keyed by the instance key they belong to. */
  private Map<String, Integer> drainNotes(String service) {
    String notePrefix = layout.prefix() + DRAINED_SEGMENT + service + "/";
    GetResponse r =
        await(
            () -> client.getKVClient()
                .get(bytes(notePrefix), GetOption.builder().isPrefix(true).build()),
            "list drain notes of " + service);
    Map<String, Integer> notes = new HashMap<>();
    for (KeyValue kv : r.getKvs()) {
      String noteKey = kv.getKey().toString(StandardCharsets.UTF_8);
      String id = noteKey.substring(notePrefix.length());
      parseNote(kv).ifPresent(w -> notes.put(layout.servicePrefix(service) + id, w));
    }
    return notes;
  }

  private static Optional<Integer> parseNote(KeyValue kv) {
    String s = kv.getValue().toString(StandardCharsets.UTF_8).strip();
    try {
      int w = Integer.parseInt(s);
      return Validation.isValidWeight(w) ? Optional.of(w) : Optional.empty();
    } catch (NumberFormatException e) {
      return Optional.empty();
    }
  }

  private String drainNoteKey(String service, String address) {
    return drainNoteKey(layout, service, address);
  }

  /** The drain note of {@code <prefix>/<service>/<address>}: {@code <prefix>/.drained/<service>/<address>}. */
  static String drainNoteKey(KeyLayout layout, String service, String address) {
    Validation.checkServiceName(service);
    Validation.checkAddress(address);
    return layout.prefix() + DRAINED_SEGMENT + service + "/" + address;
  }

  private String drainNoteKey(RegisteredInstance instance) {
    return layout.prefix() + DRAINED_SEGMENT + instance.service() + "/" + instance.instanceId();
  }

  private long ttlOf(long leaseId) {
    long ttl =
        await(() -> client.getLeaseClient().timeToLive(leaseId, LeaseOption.DEFAULT), "lease ttl")
            .getTTL();
    return ttl > 0 ? ttl : -1;
  }

  private <T> T await(Supplier<CompletableFuture<T>> call, String what) {
    return calls.await(what, call);
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }
}
