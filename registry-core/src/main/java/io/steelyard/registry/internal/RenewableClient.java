package io.steelyard.registry.internal;

import static com.google.common.base.Preconditions.checkArgument;
import static java.util.Objects.requireNonNull;

import com.google.common.base.Ticker;
import io.etcd.jetcd.Client;
import io.steelyard.registry.EtcdConnection;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import javax.annotation.Nullable;
import javax.annotation.concurrent.GuardedBy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The current jetcd {@link Client} of one {@link EtcdConnection}, replaced by a fresh one when
 * its user reports that it keeps failing.
 *
 * <p><b>Why.</b> After a long etcd outage the gRPC channel under a jetcd client backs off its
 * reconnects to about two minutes, so etcd can be back for a long while before the old client
 * tries again, and jetcd exposes no {@code resetConnectBackoff()}. A new client dials at once.
 * Renewal is rate-limited ({@code minRenewInterval}), so many users reporting the same failure
 * replace the client once.
 *
 * <pre>{@code
 * RenewableClient clients = RenewableClient.owned(EtcdConnection.of("http://127.0.0.1:2379"));
 * Client c = clients.client();
 * ... c failed again and again ...
 * clients.renew(c);   // replaces it, unless someone did already or the last renewal is recent
 * clients.close();    // closes the current client for good
 * }</pre>
 *
 * <p><b>Ownership.</b> An {@linkplain #owned owned} holder creates its clients from the
 * connection and closes each one it replaces (on the {@code closer}, since closing a jetcd client
 * can block for a moment, and a caller may still be using it) and, on {@link #close()}, the
 * current one. A {@linkplain #borrowed
 * borrowed} holder wraps a client the caller owns: it never replaces and never closes it.
 *
 * <p><b>Threading.</b> Thread-safe; {@link #client()} is a volatile read.
 */
public final class RenewableClient implements AutoCloseable {

  /** Default minimum time between two replacements, in seconds: {@value}. */
  public static final long DEFAULT_MIN_RENEW_INTERVAL_SECONDS = 10;

  private static final Logger logger = LoggerFactory.getLogger(RenewableClient.class);

  @Nullable private final EtcdConnection connection;
  private final long minRenewIntervalNanos;
  private final Ticker ticker;
  private final Executor closer;

  private volatile Client client;

  @GuardedBy("this")
  private boolean closed;

  @GuardedBy("this")
  private long lastRenewNanos;

  /**
   * An owned holder: connects now (jetcd dials lazily, so this never fails because etcd is
   * down), renews at most every {@code minRenewInterval} by {@code ticker}, and closes replaced
   * clients on {@code closer}.
   */
  public RenewableClient(
      EtcdConnection connection, Duration minRenewInterval, Ticker ticker, Executor closer) {
    this.connection = requireNonNull(connection, "connection");
    requireNonNull(minRenewInterval, "minRenewInterval");
    checkArgument(
        !minRenewInterval.isNegative(), "minRenewInterval: %s (expected: >= 0)", minRenewInterval);
    this.minRenewIntervalNanos = minRenewInterval.toNanos();
    this.ticker = requireNonNull(ticker, "ticker");
    this.closer = requireNonNull(closer, "closer");
    this.client = warm(connection.connect());
    synchronized (this) {
      this.lastRenewNanos = ticker.read();
    }
  }

  private RenewableClient(Client borrowed) {
    this.connection = null;
    this.minRenewIntervalNanos = 0;
    this.ticker = Ticker.systemTicker();
    this.closer = Runnable::run;
    this.client = warm(requireNonNull(borrowed, "client"));
  }

  /**
   * An owned holder with the defaults: renewals at most every {@value
   * #DEFAULT_MIN_RENEW_INTERVAL_SECONDS} s, replaced clients closed on a short-lived daemon
   * thread.
   */
  public static RenewableClient owned(EtcdConnection connection) {
    return owned(connection, Duration.ofSeconds(DEFAULT_MIN_RENEW_INTERVAL_SECONDS));
  }

  /** Like {@link #owned(EtcdConnection)}, with renewals at most every {@code minRenewInterval}. */
  public static RenewableClient owned(EtcdConnection connection, Duration minRenewInterval) {
    return owned(connection, minRenewInterval, Ticker.systemTicker());
  }

  /** Like {@link #owned(EtcdConnection, Duration)}, with time read from {@code ticker}. */
  public static RenewableClient owned(
      EtcdConnection connection, Duration minRenewInterval, Ticker ticker) {
    return new RenewableClient(
        connection, minRenewInterval, ticker, RenewableClient::closeOnOwnThread);
  }

  /** A holder of {@code client}, which the caller owns: never replaced, never closed here. */
  public static RenewableClient borrowed(Client client) {
    return new RenewableClient(client);
  }

  /** The current client. Do not close it; hold on to it only to pass it to {@link #renew}. */
  public Client client() {
    return client;
  }

  /** Whether this holder created its clients (and so may replace and close them). */
  public boolean owned() {
    return connection != null;
  }

  /**
   * Replaces {@code failed} with a fresh client, unless it is no longer the current one (someone
   * renewed it already), the last renewal was less than the minimum interval ago, the holder is
   * borrowed or closed, or a new client cannot be built (then the old one stays, and this is
   * logged). The replaced client is closed on the closer.
   *
   * @return whether the client was replaced
   */
  public boolean renew(Client failed) {
    requireNonNull(failed, "failed");
    if (connection == null) {
      return false;
    }
    synchronized (this) {
      long now = ticker.read();
      if (closed || client != failed || now - lastRenewNanos < minRenewIntervalNanos) {
        return false;
      }
      try {
        client = warm(connection.connect());
      } catch (RuntimeException e) {
        logger.warn("Cannot build a fresh etcd client for {}; keeping the old one", connection, e);
        return false;
      }
      lastRenewNanos = now;
    }
    logger.debug(
        "etcd at {} keeps failing; replaced the client to reconnect at once",
        connection.endpointsString());
    closeLater(failed);
    return true;
  }

  /**
   * Closes the current client, if owned, on the calling thread (a moment's block; callers that
   * must not block hand this call to an executor); later renewals do nothing. Idempotent.
   */
  @Override
  public void close() {
    Client c;
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      c = client;
    }
    if (connection != null) {
      closeQuietly(c);
    }
  }

  /**
   * {@link #close()} on the closer, for callers that must not block; the future completes once
   * the client is closed (at once for a borrowed holder).
   */
  public CompletableFuture<Void> closeAsync() {
    if (connection == null) {
      close();
      return CompletableFuture.completedFuture(null);
    }
    CompletableFuture<Void> done = new CompletableFuture<>();
    Runnable task =
        () -> {
          try {
            close();
          } finally {
            done.complete(null);
          }
        };
    try {
      closer.execute(task);
    } catch (RuntimeException e) {
      task.run();
    }
    return done;
  }

  /**
   * jetcd builds each service client, and with the first one its gRPC channel and a Vert.x
   * instance, on first use: seconds on a cold JVM. Do it here, on the thread that builds the
   * holder, not on the first call's (an executor shared by many registrations). Still lazy on the
   * network: nothing dials before the first call.
   */
  private static Client warm(Client c) {
    c.getKVClient();
    c.getLeaseClient();
    c.getWatchClient();
    return c;
  }

  private void closeLater(Client c) {
    try {
      closer.execute(() -> closeQuietly(c));
    } catch (RuntimeException e) {
      // A closer that no longer runs anything: close here rather than leak the client.
      closeQuietly(c);
    }
  }

  private void closeQuietly(Client c) {
    try {
      c.close();
    } catch (RuntimeException e) {
      logger.debug("Closing an etcd client of {} failed", connection, e);
    }
  }

  private static void closeOnOwnThread(Runnable close) {
    Thread t = new Thread(close, "steelyard-etcd-close");
    t.setDaemon(true);
    t.start();
  }

  @Override
  public String toString() {
    return "RenewableClient{" + (connection != null ? connection : "borrowed") + "}";
  }
}
