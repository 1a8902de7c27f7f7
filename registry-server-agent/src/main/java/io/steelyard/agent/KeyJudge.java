package io.steelyard.agent;

import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.lease.LeaseTimeToLiveResponse;
import io.etcd.jetcd.options.LeaseOption;
import io.steelyard.registry.DecodedValue;
import io.steelyard.registry.ValueCodec;
import io.steelyard.registry.internal.EtcdCalls;
import io.steelyard.registry.internal.EtcdErrors;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Judges what etcd says about a registered key — its watch's events, a read after a write of ours
 * failed its guard, etcd gone back in time — against the registration's own writes: a value we
 * wrote is not news, one written under our lease by someone else is an operator's weight ({@link
 * WeightWrites#judge}), one under another lease is left alone, and a key that etcd's restore took
 * back to history is written again as it should be ({@link #onEtcdWentBack}).
 *
 * <p><b>Own writes.</b> An event is judged only when it is newer than our last answered write and
 * no write of ours is in flight; while one is, the key is read once it is answered (and always
 * after our write failed its revision guard), so our own writes are never taken for an
 * operator's. It keeps the key's mod revision as last seen: the guard of the next registration
 * put.
 *
 * <p><b>A key gone</b> ({@link #onKeyGone}) is an operator's delete while its lease lives on, else
 * the lease went and took the key with it.
 *
 * <p>Threading: confined to the registration's serial executor.
 */
final class KeyJudge {

  /** What the judge needs of its registration; called on the serial executor. */
  interface Registration {
    /** Bumped whenever the lease's watch is dropped; work of an older one is ignored. */
    long generation();

    long leaseId();

    boolean closing();

    RegistrationState state();

    Client client();

    /** The key's value as it should be with weight {@code w}. */
    byte[] encode(int w);

    /** etcd answered about the key: the retry backoff starts afresh. */
    void keyAnswered();

    /** Runs {@code task} on serial after the registration's retry backoff; returns the delay. */
    long retryLater(Runnable task);

    /** etcd no longer knows {@code lease} ({@code why}): every key on it registers again. */
    void leaseGone(long lease, RecoveryCause why, String reason);

    /** The key was deleted while {@code lease} lives: an operator deregistered it. */
    void deletedByOperator(long lease);
  }

  private static final Logger logger = LoggerFactory.getLogger(KeyJudge.class);

  private final OwnKey ownKey;
  private final String key;
  private final EtcdCalls calls;
  private final Executor serial;
  private final WeightWrites weights;
  private final Registration reg;

  // serial
  private boolean warnedForeignLease;
  /** serial: the key's mod revision as last seen, the guard of the next registration put; 0 absent. */
  private long knownModRevision;
  /** serial: the highest revision of our own successful writes; older events are not news. */
  private long ownRevision;
  /** serial: our writes of the key in flight; events meanwhile are judged once they are answered. */
  private int ownWritesInFlight;
  private boolean recheckAfterOwnWrites;

  KeyJudge(OwnKey ownKey, EtcdCalls calls, Executor serial, WeightWrites weights, Registration reg) {
    this.ownKey = ownKey;
    this.key = ownKey.toString();
    this.calls = calls;
    this.serial = serial;
    this.weights = weights;
    this.reg = reg;
  }

  /** The key's mod revision as last seen ({@code 0}: absent): the guard of a registration put. */
  long knownModRevision() {
    return knownModRevision;
  }

  /** The key was put with a new lease at {@code putRevision}. */
  void registered(long putRevision) {
    warnedForeignLease = false;
    knownModRevision = putRevision;
    ownRevision = putRevision;
  }

  /** The key is gone (an operator's delete): the next put expects it absent. */
  void forgetKey() {
    knownModRevision = 0;
  }

  /** One of our writes of the key leaves. */
  void ownWriteStarted() {
    ownWritesInFlight++;
  }

  /**
   * It was answered: at mod revision {@code revision}, or {@code 0} when it failed; {@code
   * conflicted} when its guard failed (someone else wrote).
   */
  void ownWriteAnswered(long gen, long revision, boolean conflicted) {
    if (revision != 0) {
      ownRevision = Math.max(ownRevision, revision);
      knownModRevision = Math.max(knownModRevision, revision);
    }
    ownWriteDone(gen, conflicted);
  }

  /** The watch saw the key written (by anyone), or a read found it. */
  void onKeyWritten(long gen, KeyValue kv) {
    if (gen != reg.generation() || reg.closing()) {
      return;
    }
    reg.keyAnswered();
    knownModRevision = Math.max(knownModRevision, kv.getModRevision());
    long leaseId = reg.leaseId();
    if (kv.getLease() != leaseId) {
      if (!warnedForeignLease) {
        warnedForeignLease = true;
        logger.warn(
            "Key {} was overwritten with lease {} instead of ours ({}); leaving it as it is",
            key, Long.toHexString(kv.getLease()), Long.toHexString(leaseId));
      }
      return;
    }
    if (kv.getModRevision() <= ownRevision) {
      return; // our own write, or older than it: nothing new
    }
    if (ownWritesInFlight > 0) {
      // Ours or someone else's? Known once our write is answered (see ownWriteDone).
      recheckAfterOwnWrites = true;
      return;
    }
    judge(kv);
  }

  /** What the watch of the key for generation {@code gen} says, judged here. */
  KeyWatch.Listener watchListener(long gen) {
    return new KeyWatch.Listener() {
      @Override
      public void onKeyWritten(KeyValue kv) {
        KeyJudge.this.onKeyWritten(gen, kv);
      }

      @Override
      public void onKeyGone() {
        KeyJudge.this.onKeyGone(gen);
      }

      @Override
      public void onEtcdWentBack(@Nullable KeyValue kv) {
        KeyJudge.this.onEtcdWentBack(gen, kv);
      }
    };
  }

  /** The watch saw the key deleted: asks etcd whether its lease lives, then judges. */
  void onKeyGone(long gen) {
    if (gen != reg.generation() || reg.closing()) {
      return;
    }
    long lease = reg.leaseId();
    Client client = reg.client();
    calls.call(
            "ask etcd about lease " + Long.toHexString(lease),
            () -> client.getLeaseClient().timeToLive(lease, LeaseOption.DEFAULT))
        .whenCompleteAsync((r, t) -> afterKeyGone(gen, lease, r, t), serial);
  }

  private void afterKeyGone(
      long gen, long lease, @Nullable LeaseTimeToLiveResponse r, @Nullable Throwable t) {
    if (gen != reg.generation() || reg.closing()) {
      return;
    }
    long ttl;
    if (t == null) {
      ttl = r.getTTL();
    } else if (EtcdErrors.isLeaseNotFound(t)) {
      ttl = -1;
    } else {
      long delayNanos = reg.retryLater(() -> onKeyGone(gen));
      logger.info(
          "Key {} is gone; cannot ask etcd about lease {} yet, asking again in {} ms: {}",
          key, Long.toHexString(lease), TimeUnit.NANOSECONDS.toMillis(delayNanos),
          EtcdErrors.message(t));
      return;
    }
    if (ttl > 0) {
      knownModRevision = 0; // the next put expects it absent
      reg.deletedByOperator(lease);
    } else {
      reg.leaseGone(lease, RecoveryCause.KEY_LOST, "the key went with its lease (revoked or expired)");
    }
  }

  /** A value under our lease that we did not write: its weight is judged by the weights. */
  private void judge(KeyValue kv) {
    if (ValueCodec.decode(kv.getValue().getBytes()) instanceof DecodedValue.Accepted a) {
      weights.judge(a.weight());
    }
  }

  /**
   * One of our writes was answered; once none is in flight, read the key if an event came
   * meanwhile or {@code conflicted} (its guard failed: someone else wrote).
   */
  private void ownWriteDone(long gen, boolean conflicted) {
    ownWritesInFlight--;
    recheckAfterOwnWrites |= conflicted;
    if (ownWritesInFlight == 0 && recheckAfterOwnWrites) {
      recheckAfterOwnWrites = false;
      recheck(gen);
    }
  }

  /** Reads the key and judges what it holds: after one of our writes was refused by its guard. */
  private void recheck(long gen) {
    if (gen != reg.generation() || reg.closing() || reg.state() != RegistrationState.REGISTERED) {
      return;
    }
    Client client = reg.client();
    calls.call("get " + key, () -> client.getKVClient().get(ownKey.bytes()))
        .whenCompleteAsync(
            (r, t) -> {
              if (gen != reg.generation() || reg.closing() || t != null || r.getKvs().isEmpty()) {
                return; // the watch tells about a key that is gone, or when etcd is back
              }
              KeyValue kv = r.getKvs().get(0);
              knownModRevision = Math.max(knownModRevision, kv.getModRevision());
              if (kv.getLease() == reg.leaseId() && ownWritesInFlight == 0) {
                judge(kv);
              }
            },
            serial);
  }

  /**
   * etcd went back in time under the key (restored from an older snapshot) while our lease lived
   * on: what it holds is history. Write the key as it should be (our weight, format and metadata,
   * with our lease, guarded), unless that is what it holds already.
   */
  void onEtcdWentBack(long gen, @Nullable KeyValue kv) {
    if (gen != reg.generation() || reg.closing()) {
      return;
    }
    // Revisions from before the restore mean nothing now.
    ownRevision = 0;
    knownModRevision = kv == null ? 0 : kv.getModRevision();
    int w = weights.weight();
    long leaseId = reg.leaseId();
    byte[] wanted = reg.encode(w);
    if (kv != null && kv.getLease() == leaseId && Arrays.equals(kv.getValue().getBytes(), wanted)) {
      logger.info("etcd went back in time; {} already holds our value", key);
      weights.held(w);
      return;
    }
    logger.warn(
        "etcd went back in time (restored from an older snapshot?): {} holds {} with lease {};"
            + " writing ours again (weight {}, lease {})",
        key,
        kv == null ? "nothing" : "'" + kv.getValue().toString(StandardCharsets.UTF_8) + "'",
        kv == null ? "-" : Long.toHexString(kv.getLease()), w, Long.toHexString(leaseId));
    reassert(gen);
  }

  private void reassert(long gen) {
    if (gen != reg.generation() || reg.closing()) {
      return;
    }
    long lease = reg.leaseId();
    int w = weights.weight();
    ownWritesInFlight++;
    ownKey.put(calls, reg.client(), reg.encode(w), lease, knownModRevision)
        .whenCompleteAsync(
            (revision, t) -> {
              if (gen != reg.generation() || reg.closing()) {
                ownWritesInFlight--;
                return;
              }
              if (t == null) {
                ownRevision = Math.max(ownRevision, revision);
                knownModRevision = revision;
                weights.held(w);
              }
              ownWriteDone(gen, false);
              if (t == null) {
                reg.keyAnswered();
                logger.info(
                    "{} written again after etcd went back: weight {}, lease {}",
                    key, w, Long.toHexString(lease));
              } else if (EtcdErrors.isLeaseNotFound(t)) {
                reg.leaseGone(
                    lease, RecoveryCause.LEASE_EXPIRED, "etcd went back in time to before the lease");
              } else {
                long delayNanos = reg.retryLater(() -> reassert(gen));
                logger.info(
                    "Could not write {} again after etcd went back; retrying in {} ms: {}",
                    key, TimeUnit.NANOSECONDS.toMillis(delayNanos), EtcdErrors.message(t));
              }
            },
            serial);
  }
}
