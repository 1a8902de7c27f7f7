package io.steelyard.console;

import static com.google.common.base.Preconditions.checkState;
import static java.util.Objects.requireNonNull;

import com.google.common.util.concurrent.ThreadFactoryBuilder;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import io.etcd.jetcd.Client;
import io.steelyard.registry.admin.InstanceStore;
import io.steelyard.discovery.ServiceWatcher;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.net.http.HttpClient;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;
import javax.net.ssl.SSLContext;

/**
 * The steelyard console: a web application over the registry, served by the JDK's built-in HTTP
 * server ({@code com.sun.net.httpserver}) with its pages, styles and scripts read from this jar.
 *
 * <p>What: a services page (every service under the prefix with instance, drained and weight
 * totals and the metrics its instances advertise), a bookmarkable page per service at {@code
 * /services/NAME} (one row per instance, a chart of expected against observed share, updated
 * through server-sent events within moments of an etcd change, stale while etcd is unreachable),
 * and the CLI's actions — weight, drain, undrain, deregister — through the CLI's own code path,
 * each logged with who and when. {@linkplain Builder#readOnly Read-only} mode offers and accepts
 * none of them.
 *
 * <p>Safety: listens on loopback unless a {@linkplain Builder#token token} or {@linkplain
 * Builder#tls TLS} is set; with a token, every request must carry it. Writes must be same-origin
 * requests of the console's own page.
 *
 * <p>Ownership: the console opens its own etcd client from the connection and closes it (and
 * every watch) on {@link #close()}.
 *
 * <pre>{@code
 * try (ConsoleServer console = ConsoleServer.builder(EtcdConnection.fromEnvironment())
 *     .port(8080).start()) {
 *   log.info("console at {}", console.url());
 *   ...
 * }
 * }</pre>
 */
public final class ConsoleServer implements AutoCloseable {

  /** Default listening address: loopback only. */
  public static final String DEFAULT_BIND = "127.0.0.1";

  /** Default port: {@value}. */
  public static final int DEFAULT_PORT = 8088;

  private final HttpServer http;
  private final Routes routes;
  private final Client client;
  private final ExecutorService httpThreads;
  private final ExecutorService readers;
  private final ScheduledExecutorService ticker;
  private final String url;
  private final FleetWatch fleet;

  private ConsoleServer(Builder b, InetSocketAddress bind) throws IOException {
    Clock clock = b.clock;
    client = b.connection.connect();
    readers = Executors.newFixedThreadPool(2, threads("steelyard-console-read-%d"));
    ticker = Executors.newSingleThreadScheduledExecutor(threads("steelyard-console-tick"));
    // Each open service page holds one thread for its event stream; Routes caps their number.
    httpThreads = Executors.newCachedThreadPool(threads("steelyard-console-http-%d"));
    String etcdEndpoints = b.connection.endpointsString();
    InstanceStore store = new InstanceStore(client, b.layout, b.timeout);
    Metrics metrics = new Metrics(
        HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build(), System::nanoTime);
    fleet = new FleetWatch(b.connection, b.layout, etcdEndpoints, metrics, clock, ticker);
    ServicePages views = new ServicePages(
        service -> new ServicePage(service,
            listener -> ServiceWatcher.builder(b.connection, service).layout(b.layout).open(listener),
            store, metrics, etcdEndpoints, clock, readers));
    // Without a token or TLS the console is loopback-only, and then Host must name loopback.
    boolean loopbackOnly = b.token == null && b.tls == null;
    routes = new Routes(new Access(b.token, loopbackOnly, b.tls != null), b.readOnly, fleet, views,
        new Actions(store, etcdEndpoints, new EventLog(), clock), clock);
    try {
      if (b.tls != null) {
        HttpsServer https = HttpsServer.create(bind, 64);
        https.setHttpsConfigurator(new HttpsConfigurator(b.tls));
        http = https;
      } else {
        http = HttpServer.create(bind, 64);
      }
    } catch (IOException | RuntimeException e) {
      shutDownThreadsAndClient();
      throw e;
    }
    http.createContext("/", routes);
    http.setExecutor(httpThreads);
    http.start();
    ticker.scheduleWithFixedDelay(views::tick, 1, 1, TimeUnit.SECONDS);
    fleet.start(); // the first listing starts with the server, not with the first page
    InetSocketAddress bound = http.getAddress();
    String host = bind.getAddress().getHostAddress();
    url = (b.tls != null ? "https://" : "http://") + (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + bound.getPort() + "/";
  }

  private static java.util.concurrent.ThreadFactory threads(String name) {
    return new ThreadFactoryBuilder().setNameFormat(name).setDaemon(true).build();
  }

  public static Builder builder(EtcdConnection connection) {
    return new Builder(connection);
  }

  /**
   * Waits until the first listing of etcd is in (every service's name and instances), or has
   * failed (the pages then name the failure and keep retrying): at most six seconds, discovery's
   * listing timeout and a second. Whether it answered in time; {@code steelyard console} prints
   * its READY line after this, so a page opened at once shows the registry.
   */
  public boolean awaitFirstListing() throws InterruptedException {
    return fleet.awaitFirstAnswer();
  }

  /** Where the console serves, e.g. {@code http://127.0.0.1:8088/}. */
  public String url() {
    return url;
  }

  /** The port it listens on (useful with port 0). */
  public int port() {
    return http.getAddress().getPort();
  }

  /** Stops serving, ends open event streams, closes every watch and the etcd client. */
  @Override
  public void close() {
    routes.close();
    http.stop(0);
    routes.views().close();
    fleet.close();
    shutDownThreadsAndClient();
  }

  private void shutDownThreadsAndClient() {
    ticker.shutdownNow();
    readers.shutdownNow();
    httpThreads.shutdownNow();
    client.close();
  }

  /** Options of a {@link ConsoleServer}; each may be set once. */
  public static final class Builder {
    private final EtcdConnection connection;
    private KeyLayout layout = KeyLayout.defaults();
    private Duration timeout = Duration.ofMillis(InstanceStore.DEFAULT_TIMEOUT_MILLIS);
    private String bind = DEFAULT_BIND;
    private int port = DEFAULT_PORT;
    private boolean readOnly;
    @Nullable private String token;
    @Nullable private SSLContext tls;
    private Clock clock = Clock.systemUTC();

    private Builder(EtcdConnection connection) {
      this.connection = requireNonNull(connection, "connection");
    }

    /** Key layout (prefix); default {@link KeyLayout#defaults()}. */
    public Builder layout(KeyLayout layout) {
      this.layout = requireNonNull(layout, "layout");
      return this;
    }

    /** How long each etcd call may take; default {@value InstanceStore#DEFAULT_TIMEOUT_MILLIS} ms. */
    public Builder timeout(Duration timeout) {
      if (timeout.isZero() || timeout.isNegative()) {
        throw new IllegalArgumentException("timeout: " + timeout + " (expected: > 0)");
      }
      this.timeout = timeout;
      return this;
    }

    /** Address to listen on; default {@value #DEFAULT_BIND}. Not loopback needs a token or TLS. */
    public Builder bind(String bind) {
      this.bind = requireNonNull(bind, "bind");
      return this;
    }

    /** Port to listen on, 0 for any free one; default {@value #DEFAULT_PORT}. */
    public Builder port(int port) {
      if (port < 0 || port > 65_535) {
        throw new IllegalArgumentException("port: " + port + " (expected: 0..65535)");
      }
      this.port = port;
      return this;
    }

    /** Show the registry but offer and accept no action. */
    public Builder readOnly(boolean readOnly) {
      this.readOnly = readOnly;
      return this;
    }

    /** A bearer token every request must carry; required to listen beyond loopback. */
    public Builder token(String token) {
      checkState(this.token == null, "token already set");
      String t = requireNonNull(token, "token").strip();
      if (t.length() < 16) {
        throw new IllegalArgumentException(
            "token: " + t.length() + " characters (expected: at least 16)");
      }
      this.token = t;
      return this;
    }

    /**
     * Serves HTTPS with this certificate chain and private key (PEM files); lets the console
     * listen beyond loopback.
     *
     * @throws IllegalArgumentException when the files cannot be read or do not match
     */
    public Builder tls(Path certChain, Path privateKey) {
      checkState(this.tls == null, "tls already set");
      this.tls = ServerTls.fromPem(certChain, privateKey);
      return this;
    }

    /** Clock for the event list's times and staleness; default UTC system clock. */
    public Builder clock(Clock clock) {
      this.clock = requireNonNull(clock, "clock");
      return this;
    }

    /**
     * Connects and starts serving.
     *
     * @throws IllegalArgumentException when the bind address is not loopback and neither a token
     *     nor TLS is set
     * @throws UncheckedIOException when the port cannot be bound
     */
    public ConsoleServer start() {
      InetAddress address;
      try {
        address = InetAddress.getByName(bind);
      } catch (UnknownHostException e) {
        throw new IllegalArgumentException("bind: " + bind + " (expected: an address of this host)", e);
      }
      if (!address.isLoopbackAddress() && token == null && tls == null) {
        throw new IllegalArgumentException("bind: " + bind + " is not loopback (expected:"
            + " --token-file or --tls-cert/--tls-key to listen beyond this host)");
      }
      try {
        return new ConsoleServer(this, new InetSocketAddress(address, port));
      } catch (IOException e) {
        throw new UncheckedIOException("cannot listen on " + bind + ":" + port + ": " + e.getMessage(), e);
      }
    }
  }
}
