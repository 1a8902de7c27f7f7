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
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.internal.EtcdCalls;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * A registration's own writes of its key, each a transaction guarded by the key's mod revision:
 * the registration put, the re-assertion after etcd went back in time, and the delete of one
 * registration of a shared lease. (Weight updates go through {@link InstanceStore}, the path the
 * CLI shares.)
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
        ByteSequence.from(InstanceStore.drainNoteKey(layout, service, address), StandardCharsets.UTF_8);
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
