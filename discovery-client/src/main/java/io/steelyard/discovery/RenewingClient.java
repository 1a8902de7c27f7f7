package io.steelyard.discovery;

import static java.util.Objects.requireNonNull;

import com.google.common.base.Ticker;
import io.etcd.jetcd.Client;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.internal.EtcdCalls;
import io.steelyard.registry.internal.RenewableClient;
import java.time.Duration;
import java.util.concurrent.Executor;
import java.util.function.Function;
import javax.annotation.concurrent.GuardedBy;

/**
 * One etcd connection's client as the watchers share it: the {@link EtcdReader} over the current
 * client of registry-core's {@link RenewableClient}, which replaces a client that keeps failing
 * (at most every {@value RenewableClient#DEFAULT_MIN_RENEW_INTERVAL_SECONDS} s) and closes the
 * replaced one. This class only maps the current client to its reader and a failed reader back
 * to its client.
 *
 * <p>Thread-safe.
 */
final class RenewingClient implements WatchRegistry.SharedClient {

  private final RenewableClient clients;
  private final Function<Client, EtcdReader> readerOf;

  @GuardedBy("this") private Client readerClient;
  @GuardedBy("this") private EtcdReader reader;

  /**
   * @param readerOf makes the reader of a client (production: {@link JetcdReader}; the
   *     list-window IT wraps it)
   */
  RenewingClient(RenewableClient clients, Function<Client, EtcdReader> readerOf) {
    this.clients = requireNonNull(clients, "clients");
    this.readerOf = requireNonNull(readerOf, "readerOf");
  }

  /**
   * The production client of {@code connection} for a registry running on {@code scheduler}: the
   * renewal's rate limit and the listing timeout ({@link WatcherDefaults#LIST_TIMEOUT_NANOS}) run
   * on the scheduler's clock, and a replaced client is closed on {@code closer} after the
   * watcher tasks already queued (a watch is cancelled before its client goes).
   */
  static RenewingClient of(EtcdConnection connection, Scheduler scheduler, Executor closer) {
    EtcdCalls calls = new EtcdCalls(Duration.ofNanos(WatcherDefaults.LIST_TIMEOUT_NANOS), scheduler::schedule);
    return new RenewingClient(
        renewable(connection, scheduler, closer), client -> new JetcdReader(client, calls));
  }

  /** A {@link RenewableClient} of {@code connection} on the scheduler's clock and queue. */
  static RenewableClient renewable(EtcdConnection connection, Scheduler scheduler, Executor closer) {
    return new RenewableClient(
        connection,
        Duration.ofSeconds(RenewableClient.DEFAULT_MIN_RENEW_INTERVAL_SECONDS),
        ticker(scheduler),
        task -> scheduler.execute(() -> closer.execute(task)));
  }

  @Override
  public synchronized EtcdReader reader() {
    Client current = clients.client();
    if (current != readerClient) {
      readerClient = current;
      reader = readerOf.apply(current);
    }
    return reader;
  }

  @Override
  public void renew(EtcdReader failed) {
    Client failedClient;
    synchronized (this) {
      if (failed != reader) {
        return; // replaced already: the current reader has not failed yet
      }
      failedClient = readerClient;
    }
    clients.renew(failedClient);
  }

  @Override
  public void close() {
    clients.close();
  }

  private static Ticker ticker(Scheduler scheduler) {
    return new Ticker() {
      @Override
      public long read() {
        return scheduler.nanoTime();
      }
    };
  }

  @Override
  public String toString() {
    return "RenewingClient{" + clients + "}";
  }
}
