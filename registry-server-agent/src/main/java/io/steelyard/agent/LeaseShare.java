package io.steelyard.agent;

import com.google.common.base.Ticker;
import com.google.common.util.concurrent.MoreExecutors;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.lease.LeaseGrantResponse;
import io.steelyard.registry.internal.RenewableClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One lease, its keepalive and the etcd client under them, used by the registrations that write
 * their keys with it: one registration (its private lease, the default) or many ({@link
 * SharedLease}). Every registration goes through this class for its lease, so both cases are one
 * code path.
 *
 * <ul>
 *   <li><b>Acquire</b>: a registration about to write its key asks for the lease; the first ask
 *       grants it (once, however many ask meanwhile) and starts its keepalive; later asks get the
 *       live lease at once.
 *   <li><b>Loss</b> (keepalive NOT_FOUND or TTL &le; 0, no answer within the TTL, or a user found
 *       its key gone with the lease): every user is told; each registers again by acquiring, which
 *       grants one new lease for all. The lost lease is revoked only once no user's key is on it
 *       any more, so a key never disappears while its registration is moving it.
 *   <li><b>Silence</b> (no keepalive answer for {@link LeaseKeeper#silenceNanos}): the client is
 *       replaced with a fresh one (when owned) and the keepalive moves to it, so it reaches a
 *       healthy member before the lease expires. See {@link LeaseKeeper}.
 *   <li><b>Leave</b>: a registration that closes deletes its own key, guarded ({@link
 *       LeftKeys}), not by revoking the lease others still use; the last one to
 *       leave revokes the lease instead, which removes its key with it (one call, and all a
 *       private lease ever does).
 * </ul>
 *
 * <p>Threading: state is confined to a serial executor over the registrations' scheduler; users
 * are called back from it and hop to their own. No task waits for etcd.
 */
final class LeaseShare {

  /** A registration using the lease. */
  interface User {
    /**
     * {@code lease} is lost; the user, if its key is on it, registers again. Called on the share's
     * executor: hop, do not block.
     */
    void onLeaseLost(long lease, RecoveryCause why, String reason, @Nullable Throwable cause);

    /** Closes the user; for {@link SharedLease#close()}. */
    CompletableFuture<Void> closeAsync();
  }

  private static final Logger logger = LoggerFactory.getLogger(LeaseShare.class);

  private final String who;
  private final RenewableClient clients;
  private final LeaseKeeper keeper;
  private final ScheduledExecutorService scheduler;
  private final Executor serial;
  private final Ticker ticker;
  private final LeftKeys leftKeys;
  private final LeaseKeeper.Listener keepAliveListener = new KeepAliveListener();

  /** Every user that joined and has not left; read by any thread (SharedLease.close). */
  private final Set<User> users = ConcurrentHashMap.newKeySet();
  // serial: the lease each user last wrote its key with
  private final Map<User, Long> wroteWith = new HashMap<>();
  // serial: leases lost or replaced that may still hold a key in etcd
  private final Set<Long> stale = new LinkedHashSet<>();
  // serial
  @Nullable private CompletableFuture<Long> granting;
  /** serial: the grant call in flight, cancelled when everyone leaves. */
  @Nullable private CompletableFuture<?> grantCall;
  @Nullable private LeaseKeeper.KeptAlive kept;
  private boolean closed;
  /** The live lease; 0 when none. Written only on serial. */
  private volatile long lease;
  /** The last lease lost and why; written on serial before {@link #lease} changes. */
  @Nullable private volatile Loss lastLoss;

  LeaseShare(
      String who,
      RenewableClient clients,
      long ttlSeconds,
      Duration operationTimeout,
      ScheduledExecutorService scheduler,
      Ticker ticker,
      Random random) {
    this.who = who;
    this.clients = clients;
    this.keeper = new LeaseKeeper(ttlSeconds, operationTimeout, scheduler, ticker, who);
    this.scheduler = scheduler;
    this.serial = MoreExecutors.newSequentialExecutor(scheduler);
    this.ticker = ticker;
    this.leftKeys =
        new LeftKeys(
            who, scheduler, serial, operationTimeout, RegistrationDefaults.defaultBackoff(random),
            clients::client, () -> closed || users.isEmpty() ? Set.of() : heldLeases());
  }

  /** The current client: the one to make every call of a user with. */
  Client client() {
    return clients.client();
  }

  long ttlSeconds() {
    return keeper.ttlSeconds();
  }

  /** The live lease, or 0. Any thread. */
  long leaseId() {
    return lease;
  }

  /**
   * Why {@code lost} was lost, if it is the last lease this share lost; else null. Any thread:
   * once {@link #leaseId()} no longer returns a lease, its loss is readable here.
   */
  @Nullable
  RecoveryCause lossCause(long lost) {
    Loss l = lastLoss;
    return l != null && l.lease == lost ? l.why : null;
  }

  /** Users that joined and have not left. Any thread. */
  int userCount() {
    return users.size();
  }

  List<User> users() {
    return List.copyOf(users);
  }

  // ---- called by users, on any thread ----

  /**
   * Joins {@code user} (if not yet) and completes with a live lease to write with: the current
   * one, or one granted now. Fails with the grant's failure; the user retries.
   */
  CompletableFuture<Long> acquire(User user) {
    CompletableFuture<Long> f = new CompletableFuture<>();
    if (!post(() -> doAcquire(user, f))) {
      f.completeExceptionally(closedException());
    }
    return f;
  }

  /** {@code user} wrote its key with {@code lease}: leases it left behind may be revoked. */
  void written(User user, long lease) {
    post(
        () -> {
          if (users.contains(user)) {
            wroteWith.put(user, lease);
            revokeStaleNotInUse();
          }
        });
  }

  /** A user found {@code lease} gone (its key went with it, or a put was refused for it). */
  void reportLost(long lease, RecoveryCause why, String reason) {
    post(
        () -> {
          if (lease != 0 && lease == this.lease) {
            lose(why, reason, null);
          }
        });
  }

  /**
   * {@code failed} keeps failing for a user: replace it (unless someone did, recently, or the
   * client is borrowed), and move the keepalive to the new one.
   */
  void renew(Client failed) {
    post(
        () -> {
          if (clients.renew(failed)) {
            logger.debug("Reconnecting {} to etcd with a new client", who);
          }
          followClient();
        });
  }

  /**
   * {@code user} leaves. The last user revokes every lease still held (their keys go with them);
   * any other deletes {@code key} where it is held by one of this share's leases, guarded, and
   * leaves the lease to the others. A delete that fails is retried in the background for as long
   * as the lease lives. Completes within about {@code budget}; never fails.
   */
  CompletableFuture<Void> leave(User user, @Nullable OwnKey key, Duration budget) {
    CompletableFuture<Void> done = new CompletableFuture<>();
    if (!post(() -> doLeave(user, key, budget, done))) {
      done.complete(null);
    }
    return done;
  }

  /**
   * Stops for good: revokes what is still held within {@code budget}, closes an owned client.
   * Users should have left (SharedLease closes them first).
   */
  CompletableFuture<Void> close(Duration budget) {
    CompletableFuture<Void> done = new CompletableFuture<>();
    boolean posted =
        post(
            () -> {
              if (closed) {
                done.complete(null);
                return;
              }
              closed = true;
              revokeAll(budget)
                  .whenComplete((v, t) -> clients.closeAsync().whenComplete((v2, t2) -> done.complete(null)));
            });
    if (!posted) {
      clients.closeAsync().whenComplete((v, t) -> done.complete(null));
    }
    return done;
  }

  /** Closes an owned client from the caller's thread, when a close did not finish in time. */
  void forceClose() {
    clients.close();
  }

  // ---- everything below runs on serial ----

  private void doAcquire(User user, CompletableFuture<Long> f) {
    if (closed) {
      f.completeExceptionally(closedException());
      return;
    }
    users.add(user);
    if (lease != 0) {
      f.complete(lease);
      return;
    }
    if (granting == null) {
      startGrant();
    }
    granting.whenComplete(
        (l, t) -> {
          if (t != null) {
            f.completeExceptionally(t);
          } else {
            f.complete(l);
          }
        });
  }

  private void startGrant() {
    Client c = clients.client();
    CompletableFuture<Long> g = new CompletableFuture<>();
    granting = g;
    CompletableFuture<LeaseGrantResponse> call = keeper.grant(c);
    grantCall = call;
    call.whenCompleteAsync(
        (r, t) -> {
          if (granting == g) {
            granting = null;
            grantCall = null;
          }
          if (t != null) {
            g.completeExceptionally(t);
            return;
          }
          long id = r.getID();
          if (closed || users.isEmpty() || lease != 0) {
            // Everyone left while it was being granted (or it was cancelled and another granted
            // since): it holds nothing.
            keeper.revokeInBackground(c, id);
            g.completeExceptionally(closedException());
            return;
          }
          lease = id;
          kept = keeper.keepAlive(c, id, ticker.read(), serial, keepAliveListener);
          logger.debug("Granted lease {} (ttl {}s) for {}", Long.toHexString(id), ttlSeconds(), who);
          g.complete(id);
        },
        serial);
  }

  /** The lease is gone: tell every user, keep it as stale until no key is on it. */
  private void lose(RecoveryCause why, String reason, @Nullable Throwable cause) {
    long lost = lease;
    lastLoss = new Loss(lost, why);
    if (kept != null) {
      kept.close();
      kept = null;
    }
    lease = 0;
    stale.add(lost);
    int n = users.size();
    logger.warn(
        "Lease {} of {} lost: {}; registering {} again",
        Long.toHexString(lost), who, reason, n == 1 ? "it" : n + " registrations", cause);
    for (User u : users) {
      u.onLeaseLost(lost, why, reason, cause);
    }
  }

  /** The keepalive is on a client that is no longer current: move it to the current one. */
  private void followClient() {
    if (kept != null && kept.client() != clients.client()) {
      moveKeepAlive();
    }
  }

  private void moveKeepAlive() {
    LeaseKeeper.KeptAlive old = kept;
    old.close();
    kept =
        keeper.keepAlive(
            clients.client(), old.lease(), old.lastAnswerNanos(), old.latenessNanos(), serial,
            keepAliveListener);
  }

  private void doLeave(User user, @Nullable OwnKey key, Duration budget, CompletableFuture<Void> done) {
    boolean wasUser = users.remove(user);
    wroteWith.remove(user);
    if (users.isEmpty()) {
      // The last one out revokes: every key still on these leases (its own) goes with them.
      revokeAll(budget).whenComplete((v, t) -> done.complete(null));
      return;
    }
    if (key == null || !wasUser) {
      revokeStaleNotInUse();
      done.complete(null);
      return;
    }
    leftKeys.delete(key, budget).whenCompleteAsync(
        (v, t) -> {
          revokeStaleNotInUse();
          done.complete(null);
        },
        serial);
  }

  private Set<Long> heldLeases() {
    Set<Long> ours = new HashSet<>(stale);
    if (lease != 0) {
      ours.add(lease);
    }
    return ours;
  }

  /** Revokes stale leases no user's key is on any more. */
  private void revokeStaleNotInUse() {
    for (Iterator<Long> it = stale.iterator(); it.hasNext(); ) {
      long s = it.next();
      if (!wroteWith.containsValue(s)) {
        keeper.revokeInBackground(clients.client(), s);
        it.remove();
      }
    }
  }

  /** Stops the keepalive and revokes the live lease and every stale one, within {@code budget}. */
  private CompletableFuture<Void> revokeAll(Duration budget) {
    if (grantCall != null) {
      grantCall.cancel(true); // a lease granted anyway expires with its TTL, holding nothing
      grantCall = null;
    }
    if (kept != null) {
      kept.close();
      kept = null;
    }
    List<Long> all = new ArrayList<>(stale);
    if (lease != 0) {
      all.add(0, lease);
    }
    lease = 0;
    stale.clear();
    wroteWith.clear();
    List<CompletableFuture<Void>> revokes = new ArrayList<>();
    for (long l : all) {
      revokes.add(keeper.revokeOnClose(clients.client(), l, budget));
    }
    return CompletableFuture.allOf(revokes.toArray(CompletableFuture<?>[]::new));
  }

  private boolean post(Runnable task) {
    return RegistrationScheduler.post(serial, task, logger, "lease", who);
  }


  private CancellationException closedException() {
    return new CancellationException("lease of " + who + " closed");
  }

  @Override
  public String toString() {
    long l = lease;
    return "lease of " + who + (l != 0 ? " " + Long.toHexString(l) : "") + ", " + users.size() + " user(s)";
  }

  private record Loss(long lease, RecoveryCause why) {}

  /** Reacts to the keepalive, on serial; ignores a keepalive that was replaced. */
  private final class KeepAliveListener implements LeaseKeeper.Listener {
    @Override
    public void onSilent(LeaseKeeper.KeptAlive k) {
      if (k != kept) {
        return;
      }
      long silentMillis = TimeUnit.NANOSECONDS.toMillis(ticker.read() - k.lastAnswerNanos());
      Client current = clients.client();
      if (k.client() != current) {
        logger.warn(
            "Keepalive of lease {} ({}) silent for {} ms; moving it to the current etcd client",
            Long.toHexString(k.lease()), who, silentMillis);
        moveKeepAlive();
      } else if (clients.renew(current)) {
        logger.warn(
            "Keepalive of lease {} ({}) silent for {} ms (member partitioned or stalled?); moved it"
                + " to a fresh etcd connection",
            Long.toHexString(k.lease()), who, silentMillis);
        moveKeepAlive();
      } else {
        logger.warn(
            "Keepalive of lease {} ({}) silent for {} ms; cannot move it to a fresh connection ({});"
                + " the lease expires {}s after the last answer unless etcd answers",
            Long.toHexString(k.lease()), who, silentMillis,
            clients.owned() ? "replaced less than " + RegistrationDefaults.RENEW_CLIENT_MIN_INTERVAL.toSeconds() + " s ago" : "the client is the caller's",
            ttlSeconds());
      }
    }

    @Override
    public void onLost(
        LeaseKeeper.KeptAlive k, RecoveryCause why, String reason, @Nullable Throwable cause) {
      if (k == kept) {
        kept = null;
        lose(why, reason, cause);
      }
    }

    @Override
    public void onBroken(LeaseKeeper.KeptAlive k, Throwable error) {
      if (k == kept) {
        followClient();
      }
    }
  }
}
