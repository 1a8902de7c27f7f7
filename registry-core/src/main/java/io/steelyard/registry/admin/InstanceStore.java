package io.steelyard.registry.admin;

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
 * Reads and rewrites registered instances for an operator: the one code path behind the CLI's
 * {@code list}, {@code weight}, {@code drain}, {@code undrain} and {@code deregister}, the Spring
 * Boot actuator's drain and undrain, and any console. Reads are {@link #list}, {@link #get} and
 * {@link #require}; every write is an {@link InstanceWrite} carried out by {@link #apply}.
 *
 * <pre>{@code
 * InstanceStore store = new InstanceStore(client, KeyLayout.defaults(), Duration.ofSeconds(5));
 * store.list("greeter", true).forEach(i -> ...);
 * InstanceWrite.Result r = store.apply(InstanceWrite.drain("greeter", "10.0.0.7:50051"));
 * log.info(r.message());   // "10.0.0.7:50051 drained: weight 5 -> 0 (undrain restores 5)"
 * }</pre>
 *
 * <p>Every rewrite keeps the key's <em>current</em> lease and is guarded by its mod revision in a
 * transaction, so it can never leave an orphan key that outlives its server (jetcd has no {@code
 * ignore_lease}), and a concurrent change makes it fail with {@link RegistryException.Kind#CONFLICT}
 * instead of being lost. A rewrite keeps the value's format: a value written by Go's etcd naming
 * manager stays that JSON (a plain {@code host:port} value becomes pipe, the simplest format that
 * can carry a weight). No write ever creates a key.
 *
 * <p>{@code drain} remembers the weight it replaced in the instance's drain note ({@link
 * KeyLayout#drainNoteKey}) on the same lease, so it expires with the instance; {@code undrain}
 * restores it, and any other weight written removes it.
 *
 * <p>Every method blocks the caller; each etcd call waits at most the configured timeout and then
 * fails with {@link RegistryException.Kind#UNAVAILABLE}; a refusal (permission, authentication,
 * TLS, a limit) fails at once with its own kind; every failure is a {@link RegistryException}.
 * Thread-safe.
 *
 * <p><b>Why a jetcd {@link Client}</b>: the store shares the caller's client (a tool that lists,
 * watches and writes holds one connection, not one per concern) and does not own or close it;
 * {@link io.steelyard.registry.EtcdConnection#connect()} makes one from steelyard's settings.
 */
public final class InstanceStore {

  /** Default time to wait for etcd per call, in milliseconds: {@value}. */
  public static final long DEFAULT_TIMEOUT_MILLIS = 5_000;

  private final Client client;
  private final KeyLayout layout;
  private final EtcdCalls calls;

  /** A store over {@code client} (not owned) and {@code layout}; each etcd call waits at most {@code timeout}. */
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

  /** The instance registered at {@code <prefix>/<service>/<address>}, with its drain note, if any. */
  public Optional<RegisteredInstance> get(String service, String address) {
    String key = layout.instanceKey(service, address);
    String noteKey = layout.drainNoteKey(service, address);
    TxnResponse r =
        await(
            () -> client.getKVClient()
                .txn()
                .Then(
                    Op.get(bytes(key), GetOption.DEFAULT),
                    Op.get(bytes(noteKey), GetOption.DEFAULT))
                .commit(),
            "get " + key);
    List<KeyValue> kvs = r.getGetResponses().get(0).getKvs();
    if (kvs.isEmpty()) {
      return Optional.empty();
    }
    Map<String, Integer> notes = new HashMap<>();
    for (KeyValue note : r.getGetResponses().get(1).getKvs()) {
      parseNote(note).ifPresent(w -> notes.put(address, w));
    }
    return Optional.of(toInstance(service, kvs.get(0), -1, notes));
  }

  /** Like {@link #get}, but a missing key is {@link RegistryException.Kind#NOT_REGISTERED}. */
  public RegisteredInstance require(String service, String address) {
    return get(service, address).orElseThrow(() -> notRegistered(service, address));
  }

  /**
   * Reads the instance and carries out {@code write} guarded by what was read: the instance's
   * weight set, drained or undrained, or its key deleted (which needs no read).
   *
   * @throws RegistryException NOT_REGISTERED when the key does not exist, CONFLICT when it changed
   *     between the read and the write (nothing written), MALFORMED when its value cannot be read,
   *     or etcd's failure
   */
  public InstanceWrite.Result apply(InstanceWrite write) {
    if (write.kind() == InstanceWrite.Kind.DEREGISTER) {
      return delete(write);
    }
    return apply(write, require(write.service(), write.address()));
  }

  /**
   * Carries out {@code write} on {@code current}, the instance as read before, provided the key has
   * not changed since (its mod revision still equals {@code current.modRevision()}); else fails
   * with CONFLICT and writes nothing. A DEREGISTER deletes the key whatever it holds.
   */
  public InstanceWrite.Result apply(InstanceWrite write, RegisteredInstance current) {
    requireNonNull(write, "write");
    requireNonNull(current, "current");
    if (!current.key().equals(layout.instanceKey(write.service(), write.address()))) {
      throw new IllegalArgumentException(
          "current: " + current.key() + " (expected: the key of " + write + ")");
    }
    RegisteredInstance after =
        switch (write.kind()) {
          case SET_WEIGHT -> setWeight(current, write.weight().getAsInt());
          case DRAIN -> drain(current);
          case UNDRAIN -> undrain(current, write.weight());
          case DEREGISTER -> null;
        };
    if (after == null) {
      return delete(write);
    }
    return new InstanceWrite.Result(write, current.key(), current, after);
  }

  private RegistryException notRegistered(String service, String address) {
    return new RegistryException(
        RegistryException.Kind.NOT_REGISTERED,
        address + " is not registered under " + service
            + " (no key " + layout.instanceKey(service, address) + ")",
        null);
  }

  /** An explicit weight ends a drain, so the drain note is removed. */
  private RegisteredInstance setWeight(RegisteredInstance current, int weight) {
    Op note = Op.delete(bytes(drainNoteKey(current)), DeleteOption.DEFAULT);
    return rewrite(current, weight, -1, note);
  }

  /** Weight 0, remembering the weight it had; a drained instance is returned unchanged. */
  private RegisteredInstance drain(RegisteredInstance current) {
    DecodedValue.Accepted value = current.acceptedOrThrow();
    if (value.weight() == 0) {
      return current;
    }
    Op note =
        Op.put(
            bytes(drainNoteKey(current)),
            bytes(Integer.toString(value.weight())),
            leaseOption(current.leaseId()));
    return rewrite(current, 0, value.weight(), note);
  }

  /**
   * Restores {@code weight} when given, else the weight recorded by {@link #drain}, else {@value
   * Validation#DEFAULT_WEIGHT}. Without {@code weight}, an instance that is not drained (weight
   * above 0) is returned unchanged.
   */
  private RegisteredInstance undrain(RegisteredInstance current, OptionalInt weight) {
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

  /** Deletes the key and its drain note in one transaction; a missing key is NOT_REGISTERED. */
  private InstanceWrite.Result delete(InstanceWrite write) {
    String key = layout.instanceKey(write.service(), write.address());
    String noteKey = layout.drainNoteKey(write.service(), write.address());
    TxnResponse r =
        await(
            () -> client.getKVClient()
                .txn()
                .Then(
                    Op.delete(bytes(key), DeleteOption.DEFAULT),
                    Op.delete(bytes(noteKey), DeleteOption.DEFAULT))
                .commit(),
            "delete " + key);
    if (r.getDeleteResponses().get(0).getDeleted() == 0) {
      throw notRegistered(write.service(), write.address());
    }
    return new InstanceWrite.Result(write, key, null, null);
  }

  /** Writes {@code weight} (and {@code extra}) if the key is still as read. */
  private RegisteredInstance rewrite(
      RegisteredInstance current, int weight, int drainedFrom, Op extra) {
    DecodedValue.Accepted value = current.acceptedOrThrow();
    ValueFormat format = value.format().forWeight(weight);
    ServiceInstance updated =
        new ServiceInstance(current.service(), value.address(), weight, value.metadata());
    byte[] encoded = ValueCodec.encode(updated, format);
    ByteSequence key = bytes(current.key());
    TxnResponse r =
        await(
            () -> client.getKVClient()
                .txn()
                .If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.modRevision(current.modRevision())))
                .Then(
                    Op.put(key, ByteSequence.from(encoded), leaseOption(current.leaseId())),
                    extra)
                .commit(),
            "update " + current.key());
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
        notes.getOrDefault(id, -1));
  }

  /** Drain notes of {@code service}, keyed by the instance id they belong to. */
  private Map<String, Integer> drainNotes(String service) {
    String notePrefix = layout.drainNotePrefix(service);
    GetResponse r =
        await(
            () -> client.getKVClient()
                .get(bytes(notePrefix), GetOption.builder().isPrefix(true).build()),
            "list drain notes of " + service);
    Map<String, Integer> notes = new HashMap<>();
    for (KeyValue kv : r.getKvs()) {
      layout.parseDrainNote(kv.getKey().toString(StandardCharsets.UTF_8))
          .filter(note -> note.service().equals(service))
          .ifPresent(note -> parseNote(kv).ifPresent(w -> notes.put(note.instanceId(), w)));
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

  /** The note of an instance as read: keys written by other tools need not end in an address. */
  private String drainNoteKey(RegisteredInstance instance) {
    return layout.drainNoteKey(new KeyLayout.InstanceKey(instance.service(), instance.instanceId()));
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
