package io.steelyard.agent;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Txn;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import io.steelyard.registry.DecodedValue;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.ValueCodec;
import io.steelyard.registry.internal.EtcdCalls;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * A registration's own writes of its key, each a transaction guarded by the key's mod revision:
 * the registration put, the re-assertion after etcd went back in time, a new weight, and the
 * delete of one registration of a shared lease. The registration always knows the revision it
 * expects (from its own writes and its watch), so a write is one transaction with no read first.
 *
 * <p><b>Why guarded.</b> A write that timed out may still be applied later: a request held in a
 * silent connection reaches etcd when the partition heals. Unguarded, such a late put would
 * overwrite the key written since, possibly with a lease that is about to be revoked, and the key
 * would vanish for a server that never stopped. Guarded by the revision it expected, a late write
 * finds the key changed and does nothing: whichever write etcd applies first wins, every later
 * one sees a different revision, and the agent learns etcd's current revision from the same
 * transaction (its {@code Else} branch reads the key) and tries again from there.
 *
 * <p><b>Deleting one key of a shared lease</b> must not revoke the lease (other registrations
 * hold keys on it) and must not delete a key someone else wrote since. etcd can compare a key's
 * lease, but jetcd 0.8.6 cannot express it ({@code Cmp} rejects the {@code LEASE} target), so the
 * guard is: read the key, and delete it only if its lease is one of ours, in a transaction guarded
 * by the mod revision that read returned. The drain note ({@code <prefix>/.drained/...}) lives on
 * the same lease and goes with the key.
 *
 * <p>Stateless apart from the key; thread-safe. Futures complete on jetcd's or the timer's
 * threads.
 */
final class OwnKey {

  /** Consecutive guard failures after which a write gives up (someone keeps rewriting the key). */
  static final int MAX_CONFLICTS = 5;

  private final ByteSequence key;
  private final ByteSequence noteKey;
  private final String keyText;

  OwnKey(KeyLayout layout, String service, String address) {
    this.keyText = layout.instanceKey(service, address);
    this.key = ByteSequence.from(keyText, StandardCharsets.UTF_8);
    this.noteKey =
        ByteSequence.from(layout.drainNoteKey(service, address), StandardCharsets.UTF_8);
  }

  ByteSequence bytes() {
    return key;
  }

  @Override
  public String toString() {
    return keyText;
  }

  /**
   * Writes {@code value} with {@code lease}, provided the key's mod revision is {@code
   * expectedModRevision} ({@code 0}: absent); when it is not, tries again from the revision etcd
   * returned, at most {@link #MAX_CONFLICTS} times. Completes with the revision of the put.
   */
  CompletableFuture<Long> put(
      EtcdCalls calls, Client client, byte[] value, long lease, long expectedModRevision) {
    return put(calls, client, ByteSequence.from(value), lease, expectedModRevision, 0);
  }

  private CompletableFuture<Long> put(
      EtcdCalls calls, Client client, ByteSequence value, long lease, long expected, int conflicts) {
    PutOption withLease = PutOption.builder().withLeaseId(lease).build();
    return calls.call(
            "put " + keyText,
            () ->
                client.getKVClient()
                    .txn()
                    .If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.modRevision(expected)))
                    .Then(Op.put(key, value, withLease))
                    .Else(Op.get(key, GetOption.DEFAULT))
                    .commit())
        .thenCompose(
            r -> {
              if (r.isSucceeded()) {
                return CompletableFuture.completedFuture(r.getHeader().getRevision());
              }
              if (conflicts + 1 >= MAX_CONFLICTS) {
                return CompletableFuture.failedFuture(conflict(conflicts + 1));
              }
              long current = modRevisionOf(r.getGetResponses().get(0).getKvs());
              return put(calls, client, value, lease, current, conflicts + 1);
            });
  }

  /**
   * Writes {@code value}, the registration's value with a new weight, with {@code lease}, and
   * removes the drain note (a weight written ends a drain, as an operator's does), in one
   * transaction guarded by {@code expectedModRevision}, the revision the registration holds.
   * Completes with the revision of the put.
   *
   * <p>When the guard fails, the same transaction reads the key: gone, it fails with
   * NOT_REGISTERED (a weight write never creates the key); held by another lease, with CONFLICT
   * (someone else owns it now); under our lease, it is written again from the revision read, at
   * most {@link #MAX_CONFLICTS} times, as a read-then-write would have, unless {@code onlyIfWeight}
   * is given and etcd no longer holds that weight: then CONFLICT, nothing written (a weight source
   * never overwrites someone else's weight).
   */
  CompletableFuture<Long> writeWeight(
      EtcdCalls calls, Client client, byte[] value, long lease, long expectedModRevision,
      OptionalInt onlyIfWeight) {
    if (lease == 0 || expectedModRevision == 0) {
      return CompletableFuture.failedFuture(
          new RegistryException(
              RegistryException.Kind.NOT_REGISTERED, keyText + " is not registered", null));
    }
    return writeWeight(
        calls, client, ByteSequence.from(value), lease, expectedModRevision, onlyIfWeight, 0);
  }

  private CompletableFuture<Long> writeWeight(
      EtcdCalls calls, Client client, ByteSequence value, long lease, long expected,
      OptionalInt onlyIfWeight, int conflicts) {
    PutOption withLease = PutOption.builder().withLeaseId(lease).build();
    return calls.call(
            "write the weight of " + keyText,
            () ->
                client.getKVClient()
                    .txn()
                    .If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.modRevision(expected)))
                    .Then(Op.put(key, value, withLease), Op.delete(noteKey, DeleteOption.DEFAULT))
                    .Else(Op.get(key, GetOption.DEFAULT))
                    .commit())
        .thenCompose(
            r -> {
              if (r.isSucceeded()) {
                return CompletableFuture.completedFuture(r.getHeader().getRevision());
              }
              List<KeyValue> kvs = r.getGetResponses().get(0).getKvs();
              if (kvs.isEmpty()) {
                return CompletableFuture.failedFuture(
                    new RegistryException(
                        RegistryException.Kind.NOT_REGISTERED,
                        keyText + " is gone; the weight is not written", null));
              }
              KeyValue kv = kvs.get(0);
              if (kv.getLease() != lease) {
                return CompletableFuture.failedFuture(
                    new RegistryException(
                        RegistryException.Kind.CONFLICT,
                        keyText + " is held by lease " + Long.toHexString(kv.getLease())
                            + ", not ours; the weight is not written", null));
              }
              if (onlyIfWeight.isPresent() && !holdsWeight(kv, onlyIfWeight.getAsInt())) {
                return CompletableFuture.failedFuture(
                    new RegistryException(
                        RegistryException.Kind.CONFLICT,
                        keyText + " no longer holds weight " + onlyIfWeight.getAsInt()
                            + "; not overwriting it", null));
              }
              if (conflicts + 1 >= MAX_CONFLICTS) {
                return CompletableFuture.failedFuture(conflict(conflicts + 1));
              }
              return writeWeight(
                  calls, client, value, lease, kv.getModRevision(), onlyIfWeight, conflicts + 1);
            });
  }

  private static boolean holdsWeight(KeyValue kv, int weight) {
    return ValueCodec.decode(kv.getValue().getBytes()) instanceof DecodedValue.Accepted a
        && a.weight() == weight;
  }

  /**
   * Deletes the key and its drain note where they are held by one of {@code leases}, each guarded
   * by the mod revision just read. Completes with whether the key itself was deleted ({@code
   * false}: absent, or held by a lease not ours, which is left alone).
   */
  CompletableFuture<Boolean> deleteIfHeldBy(EtcdCalls calls, Client client, Set<Long> leases) {
    return deleteIfHeldBy(calls, client, leases, 0);
  }

  private CompletableFuture<Boolean> deleteIfHeldBy(
      EtcdCalls calls, Client client, Set<Long> leases, int conflicts) {
    return calls.call(
            "read " + keyText,
            () ->
                client.getKVClient()
                    .txn()
                    .Then(Op.get(key, GetOption.DEFAULT), Op.get(noteKey, GetOption.DEFAULT))
                    .commit())
        .thenCompose(
            read -> {
              List<Cmp> guards = new ArrayList<>();
              List<Op> deletes = new ArrayList<>();
              boolean keyIsOurs = false;
              for (int i = 0; i < 2; i++) {
                List<KeyValue> kvs = read.getGetResponses().get(i).getKvs();
                if (!kvs.isEmpty() && kvs.get(0).getLease() != 0 && leases.contains(kvs.get(0).getLease())) {
                  ByteSequence k = kvs.get(0).getKey();
                  guards.add(new Cmp(k, Cmp.Op.EQUAL, CmpTarget.modRevision(kvs.get(0).getModRevision())));
                  deletes.add(Op.delete(k, DeleteOption.DEFAULT));
                  keyIsOurs |= i == 0;
                }
              }
              if (deletes.isEmpty()) {
                return CompletableFuture.completedFuture(false);
              }
              boolean deletingKey = keyIsOurs;
              return calls.call("delete " + keyText, () -> guarded(client, guards, deletes))
                  .thenCompose(
                      r -> {
                        if (r.isSucceeded()) {
                          return CompletableFuture.completedFuture(deletingKey);
                        }
                        if (conflicts + 1 >= MAX_CONFLICTS) {
                          return CompletableFuture.<Boolean>failedFuture(conflict(conflicts + 1));
                        }
                        return deleteIfHeldBy(calls, client, leases, conflicts + 1);
                      });
            });
  }

  private static CompletableFuture<TxnResponse> guarded(Client client, List<Cmp> guards, List<Op> ops) {
    Txn txn = client.getKVClient().txn();
    return txn.If(guards.toArray(Cmp[]::new)).Then(ops.toArray(Op[]::new)).commit();
  }

  private static long modRevisionOf(List<KeyValue> kvs) {
    return kvs.isEmpty() ? 0 : kvs.get(0).getModRevision();
  }

  private RegistryException conflict(int conflicts) {
    return new RegistryException(
        RegistryException.Kind.CONFLICT,
        keyText + " changed under every one of " + conflicts + " guarded writes; someone else keeps"
            + " rewriting it",
        null);
  }
}
