package io.steelyard.agent;

import static com.google.common.base.Preconditions.checkArgument;
import static com.google.common.base.Preconditions.checkState;
import static java.util.Objects.requireNonNull;

import com.google.common.annotations.VisibleForTesting;
import com.google.common.base.Ticker;
import io.etcd.jetcd.Client;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.internal.RenewableClient;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One etcd lease, one keepalive stream and one etcd client shared by many {@link
 * ServiceRegistration}s of a process: for a process that registers many instances (a sidecar, a
 * process serving many services), whose keepalive load on etcd's leader it divides by the number
 * of registrations (docs/agent.md, "Shared lease", has the figures).
 *
 * <pre>{@code
 * try (SharedLease lease = SharedLease.builder(EtcdConnection.of("http://127.0.0.1:2379"))
 *         .ttl(Duration.ofSeconds(10))
 *         .build()) {
 *   ServiceRegistration a = ServiceRegistration.builder(lease, "greeter", "10.0.0.7:50051").weight(5).build();
 *   ServiceRegistration b = ServiceRegistration.builder(lease, "billing", "10.0.0.7:50052").build();
 *   a.start();
 *   b.start();
 *   ...
 *   a.close();   // deletes a's key only (guarded); the lease lives on for b
 *   b.close();   // the last one: revokes the lease
 * }              // closes the client the shared lease owns
 * }</pre>
 *
 * <p><b>What it does.</b> The lease is granted when the first registration starts, kept alive
 * with one keepalive stream however many registrations write their keys with it, and revoked
 * when the last one closes (a later registration grants a new one). Losing the lease (expired,
 * revoked from outside, etcd restored without it) re-registers every registration on it with one
 * new lease. A registration that closes deletes only its own key, in a transaction guarded by
 * the key's revision and lease ({@code OwnKey}); an operator's delete of one key takes only that
 * registration out ({@link RegistrationState#DELETED_BY_OPERATOR}); a weight update keeps the
 * shared lease. Everything else is as for a registration with a lease of its own.
 *
 * <p><b>Fate sharing.</b> The registrations share the lease's fate: {@code etcdctl lease revoke}
 * of one key's lease removes every key of the process at once (they all come back with a new
 * lease within a moment), and a lost lease re-registers all of them together.
 *
 * <p><b>Ownership.</b> Built from an {@link EtcdConnection}, it creates one jetcd {@link Client}
 * that every registration on it uses (and replaces it with a fresh one when the keepalive goes
 * silent or calls keep failing) and closes it in {@link #close()}. Built from a {@code Client},
 * it never closes it. Registrations built on it close their own keys; {@link #close()} closes
 * those still open first.
 *
 * <p><b>Threading.</b> Thread-safe. It runs on the scheduler every registration of the JVM shares.
 */
public final class SharedLease implements AutoCloseable {

  private static final Logger logger = LoggerFactory.getLogger(SharedLease.class);

  private final LeaseShare share;
  private final Duration closeTimeout;
  private final Duration operationTimeout;
  private final ScheduledExecutorService scheduler;
  private final Ticker ticker;
  private final AtomicBoolean closed = new AtomicBoolean();

  private SharedLease(Builder b, RenewableClient clients) {
    this.closeTimeout = b.closeTimeout;
    this.operationTimeout = b.operationTimeout;
    this.scheduler = b.scheduler;
    this.ticker = b.ticker;
    String who = "the shared lease at " + (b.etcd != null ? b.etcd.endpointsString() : "a caller's client");
    this.share =
        new LeaseShare(who, clients, b.ttlSeconds, b.operationTimeout, b.scheduler, b.ticker, b.random);
  }

  /** A shared lease over a client of its own, connected through {@code etcd} and closed by {@link #close()}. */
  public static Builder builder(EtcdConnection etcd) {
    return new Builder(requireNonNull(etcd, "etcd"), null);
  }

  /**
   * A shared lease over {@code client}, which the caller owns and closes after {@link #close()}.
   * A jetcd {@link Client}, as {@link ServiceRegistration#builder(Client, String, String)} takes,
   * so that one connection serves the application's etcd calls and its registrations.
   */
  public static Builder builder(Client client) {
    return new Builder(null, requireNonNull(client, "client"));
  }

  /** The lease TTL in seconds. */
  public long ttlSeconds() {
    return share.ttlSeconds();
  }

  /** The live lease, or {@code 0} while none is granted (no registration started, or between a loss and the next grant). */
  public long leaseId() {
    return share.leaseId();
  }

  /** Registrations started on it and not closed (nor deleted by an operator). */
  public int registrations() {
    return share.userCount();
  }

  /**
   * Closes every registration still on it (the last one revokes the lease), then closes the client
   * if owned. Idempotent; returns within about the close timeout even when etcd is unreachable (the
   * keys then expire with the lease within the TTL).
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    long start = ticker.read();
    List<LeaseShare.User> open = share.users();
    CompletableFuture<Void> users =
        CompletableFuture.allOf(open.stream().map(LeaseShare.User::closeAsync).toArray(CompletableFuture<?>[]::new));
    Duration left = closeTimeout;
    try {
      users.get(closeTimeout.toNanos(), TimeUnit.NANOSECONDS);
      left = closeTimeout.minusNanos(ticker.read() - start);
      share.close(left.isNegative() ? Duration.ZERO : left).get(left.toNanos() + operationTimeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      logger.warn("Closing {} did not finish within {} ms; its keys expire with the lease within {}s",
          share, closeTimeout.toMillis(), ttlSeconds());
      share.forceClose();
    } catch (ExecutionException e) {
      logger.warn("Closing {} failed", share, e.getCause());
      share.forceClose();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      share.forceClose();
    }
  }

  boolean isClosed() {
    return closed.get();
  }

  LeaseShare share() {
    return share;
  }

  ScheduledExecutorService scheduler() {
    return scheduler;
  }

  @Override
  public String toString() {
    return "SharedLease{" + share + "}";
  }

  /**
   * Configures a {@link SharedLease}; every setting is checked when set, and a setting given twice
   * throws {@link IllegalStateException}.
   */
  public static final class Builder {
    @Nullable private final EtcdConnection etcd;
    @Nullable private final Client client;
    private long ttlSeconds = RegistrationDefaults.TTL_SECONDS;
    private Duration operationTimeout =
        Duration.ofMillis(RegistrationDefaults.OPERATION_TIMEOUT_MILLIS);
    private Duration closeTimeout = Duration.ofMillis(RegistrationDefaults.CLOSE_TIMEOUT_MILLIS);
    private ScheduledExecutorService scheduler = RegistrationScheduler.shared();
    private Ticker ticker = Ticker.systemTicker();
    private Random random = new SecureRandom();

    private final Set<String> given = new HashSet<>();

    private Builder(@Nullable EtcdConnection etcd, @Nullable Client client) {
      this.etcd = etcd;
      this.client = client;
    }

    /** The project's rule for builders: a setting given twice is a mistake, refused at once. */
    private void once(String setting) {
      checkState(given.add(setting), "%s already set", setting);
    }

    /**
     * The lease TTL, whole seconds (a fraction is rounded up), at least {@value
     * ServiceRegistration#MIN_TTL_SECONDS} s; default {@value ServiceRegistration#DEFAULT_TTL_SECONDS}
     * s. It applies to every registration on the lease.
     */
    public Builder ttl(Duration ttl) {
      once("ttl");
      this.ttlSeconds = ServiceRegistrationBuilder.ttlSecondsOf(ttl);
      return this;
    }

    /** Like {@link #ttl(Duration)}, in seconds. */
    public Builder ttlSeconds(long seconds) {
      checkArgument(
          seconds >= RegistrationDefaults.MIN_TTL_SECONDS,
          "ttl: %ss (expected: >= %ss)", seconds, RegistrationDefaults.MIN_TTL_SECONDS);
      return ttl(Duration.ofSeconds(seconds));
    }

    /**
     * Bound on each of the lease's etcd calls (grant, revoke, a closing registration's delete);
     * default {@value ServiceRegistration#DEFAULT_OPERATION_TIMEOUT_MILLIS} ms.
     */
    public Builder operationTimeout(Duration timeout) {
      once("operationTimeout");
      this.operationTimeout = ServiceRegistrationBuilder.positive(timeout, "operationTimeout");
      return this;
    }

    /** Bound on {@link #close()}; default {@value ServiceRegistration#DEFAULT_CLOSE_TIMEOUT_MILLIS} ms. */
    public Builder closeTimeout(Duration timeout) {
      once("closeTimeout");
      this.closeTimeout = ServiceRegistrationBuilder.positive(timeout, "closeTimeout");
      return this;
    }

    /** Runs on {@code scheduler} with time from {@code ticker}: a fake clock in tests. */
    @VisibleForTesting
    Builder scheduler(ScheduledExecutorService scheduler, Ticker ticker) {
      once("scheduler");
      this.scheduler = requireNonNull(scheduler, "scheduler");
      this.ticker = requireNonNull(ticker, "ticker");
      return this;
    }

    @VisibleForTesting
    Builder random(Random random) {
      once("random");
      this.random = requireNonNull(random, "random");
      return this;
    }

    /** The shared lease; nothing is granted before a registration on it starts. */
    public SharedLease build() {
      RenewableClient clients =
          client != null
              ? RenewableClient.borrowed(client)
              : RenewableClient.owned(
                  requireNonNull(etcd), RegistrationDefaults.RENEW_CLIENT_MIN_INTERVAL, ticker);
      return new SharedLease(this, clients);
    }
  }
}
