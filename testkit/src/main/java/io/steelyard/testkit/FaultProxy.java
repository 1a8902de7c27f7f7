package io.steelyard.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongPredicate;
import java.util.function.ToLongFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A TCP proxy on a free loopback port in front of one address, that can cut traffic the way a
 * network partition does: connections stay open and nothing arrives. Bytes sent while the proxy
 * {@linkplain #blackhole() black-holes} are held, not delivered, in both directions, and flow
 * again after {@link #pass()}: in a real partition the packets are lost but TCP retransmits them
 * once the network heals, so holding them gives the same outcome without waiting for
 * retransmission timers. A connection opened while black-holed is accepted and then stays
 * silent, as a handshake that never completes; an upstream that refuses makes the proxy reset
 * the client's connection, as a dead process's port does.
 *
 * <pre>{@code
 * try (FaultProxy proxy = FaultProxy.start("etcd0", new InetSocketAddress("127.0.0.1", 2379))) {
 *   Client client = Client.builder().endpoints(proxy.uri("http")).build();
 *   proxy.blackhole();   // the client's calls and streams now hang, as behind a partition
 *   proxy.pass();        // held bytes are delivered; nothing was lost
 * }
 * }</pre>
 *
 * <p>{@link EtcdCluster.Builder#partitionable()} puts one in front of every member's client and
 * peer port; tests may also use it directly, e.g. one per client to decide which member a client
 * reaches. Thread-safe; two daemon threads per connection plus one acceptor.
 */
public final class FaultProxy implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(FaultProxy.class);

  private static final int BUFFER_BYTES = 16 * 1024;
  private static final int CONNECT_TIMEOUT_MILLIS = 2_000;
  /** Re-check of a held link's gate; changes also wake the pumps at once through notifyAll. */
  private static final long HOLD_RECHECK_MILLIS = 200;

  private final String name;
  private final InetSocketAddress upstream;
  private final ServerSocket listener;
  private final ToLongFunction<Socket> dialerOf;
  private final LongPredicate holdsDialer;
  private final Object gate = new Object();
  private final Set<Link> links = ConcurrentHashMap.newKeySet();
  private final AtomicLong accepted = new AtomicLong();
  private volatile boolean blackholed; // written under gate
  private volatile boolean closed;

  private FaultProxy(
      String name, InetSocketAddress upstream, ToLongFunction<Socket> dialerOf, LongPredicate holdsDialer) {
    this.name = Objects.requireNonNull(name, "name");
    this.upstream = Objects.requireNonNull(upstream, "upstream");
    this.dialerOf = dialerOf;
    this.holdsDialer = holdsDialer;
    try {
      this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    } catch (IOException e) {
      throw new UncheckedIOException("fault proxy " + name + ": cannot listen on loopback", e);
    }
    Thread acceptor = new Thread(this::acceptLoop, "fault-proxy-" + name + "-accept");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  /** Starts a proxy in front of {@code upstream}, passing traffic. */
  public static FaultProxy start(String name, InetSocketAddress upstream) {
    return new FaultProxy(name, upstream, socket -> 0, dialer -> false);
  }

  /**
   * A proxy whose links are also held while {@code holdsDialer} is true for the process that
   * dialed them ({@code dialerOf} maps an accepted socket to that process's PID, 0 if unknown;
   * {@code holdsDialer} is asked about unknown dialers too, with 0).
   * Call {@link #recheck()} after whatever {@code holdsDialer} reads has changed.
   */
  static FaultProxy start(
      String name, InetSocketAddress upstream, ToLongFunction<Socket> dialerOf, LongPredicate holdsDialer) {
    return new FaultProxy(name, upstream, dialerOf, holdsDialer);
  }

  /** The loopback address clients connect to. */
  public InetSocketAddress address() {
    return new InetSocketAddress(listener.getInetAddress(), listener.getLocalPort());
  }

  public int port() {
    return listener.getLocalPort();
  }

  /** {@code scheme://127.0.0.1:PORT}, e.g. {@code http://127.0.0.1:40123}. */
  public URI uri(String scheme) {
    return URI.create(scheme + "://" + listener.getInetAddress().getHostAddress() + ":" + port());
  }

  /** Where the proxy forwards to. */
  public InetSocketAddress upstream() {
    return upstream;
  }

  /** Holds every byte in both directions, on open and new connections, until {@link #pass()}. */
  public void blackhole() {
    synchronized (gate) {
      blackholed = true;
    }
    log.debug("fault proxy {} black-holes {}", name, upstream);
  }

  /** Delivers what was held and forwards traffic again. */
  public void pass() {
    synchronized (gate) {
      blackholed = false;
      gate.notifyAll();
    }
    log.debug("fault proxy {} passes traffic to {}", name, upstream);
  }

  public boolean isBlackholed() {
    return blackholed;
  }

  /** Re-evaluates every link's gate now, after a dialer-based rule changed. */
  void recheck() {
    synchronized (gate) {
      gate.notifyAll();
    }
  }

  /** Connections currently open through the proxy. */
  public int openConnections() {
    return links.size();
  }

  /** Connections accepted since start. */
  public long acceptedConnections() {
    return accepted.get();
  }

  /** Stops listening and closes every connection; idempotent. */
  @Override
  public void close() {
    closed = true;
    closeQuietly(listener);
    for (Link link : links) {
      link.close();
    }
    recheck();
  }

  @Override
  public String toString() {
    return "FaultProxy[" + name + " " + port() + " -> " + upstream + (blackholed ? ", black-holed" : "") + "]";
  }

  private void acceptLoop() {
    while (!closed) {
      Socket down;
      try {
        down = listener.accept();
      } catch (IOException e) {
        if (!closed) {
          log.warn("fault proxy {} stopped accepting", name, e);
        }
        return;
      }
      accepted.incrementAndGet();
      try {
        open(down);
      } catch (RuntimeException e) {
        log.warn("fault proxy {}: cannot handle a connection", name, e);
        reset(down);
      }
    }
  }

  private void open(Socket down) {
    // Who dialed is looked up while the dialer's socket certainly exists: before any byte moves.
    long dialer = dialerOf.applyAsLong(down);
    Socket up = new Socket();
    try {
      up.setTcpNoDelay(true);
      down.setTcpNoDelay(true);
      up.connect(upstream, CONNECT_TIMEOUT_MILLIS);
      if (up.getLocalPort() == up.getPort() && up.getLocalAddress().equals(up.getInetAddress())) {
        // TCP "self-connect": with nobody on an ephemeral-range port, Linux may hand that very
        // port to our socket and connect it to itself. A dead upstream must look dead.
        throw new IOException("connected to itself: nobody listens on " + upstream);
      }
    } catch (IOException e) {
      log.debug("fault proxy {}: upstream {} refused: {}", name, upstream, e.toString());
      closeQuietly(up);
      reset(down);
      return;
    }
    log.trace("fault proxy {}: connection from port {} (dialer pid {})", name, down.getPort(), dialer);
    Link link = new Link(down, up, dialer);
    links.add(link);
    if (closed) {
      link.close();
      return;
    }
    link.start();
  }

  private boolean holds(Link link) {
    return blackholed || holdsDialer.test(link.dialer);
  }

  /** Waits while the link's bytes must be held; false once the link or the proxy is closed. */
  private boolean awaitPassable(Link link) throws InterruptedException {
    synchronized (gate) {
      while (!closed && !link.closed && holds(link)) {
        gate.wait(HOLD_RECHECK_MILLIS);
      }
    }
    return !closed && !link.closed;
  }

  /** One proxied connection: two pumps, closed together once both directions ended. */
  private final class Link {
    final Socket down;
    final Socket up;
    final long dialer;
    volatile boolean closed;
    private int pumpsLeft = 2; // guarded by this

    Link(Socket down, Socket up, long dialer) {
      this.down = down;
      this.up = up;
      this.dialer = dialer;
    }

    void start() {
      String id = name + "-" + down.getPort();
      Thread out = new Thread(() -> pump(down, up), "fault-proxy-" + id + "-out");
      Thread in = new Thread(() -> pump(up, down), "fault-proxy-" + id + "-in");
      out.setDaemon(true);
      in.setDaemon(true);
      out.start();
      in.start();
    }

    private void pump(Socket from, Socket to) {
      byte[] buffer = new byte[BUFFER_BYTES];
      try {
        InputStream in = from.getInputStream();
        OutputStream out = to.getOutputStream();
        while (true) {
          int n = in.read(buffer);
          if (n < 0) {
            if (awaitPassable(this)) {
              to.shutdownOutput(); // pass the half-close on, in order after held bytes
            }
            break;
          }
          if (!awaitPassable(this)) {
            break;
          }
          out.write(buffer, 0, n);
          out.flush();
        }
        pumpDone(false);
      } catch (IOException e) {
        pumpDone(true);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        pumpDone(true);
      }
    }

    private void pumpDone(boolean failed) {
      boolean last;
      synchronized (this) {
        last = --pumpsLeft == 0;
      }
      if (failed || last) {
        close();
      }
    }

    void close() {
      closed = true;
      closeQuietly(down);
      closeQuietly(up);
      links.remove(this);
      recheck();
    }
  }

  /** Closes with a TCP reset, as the kernel does for a port nobody listens on any more. */
  private static void reset(Socket socket) {
    try {
      socket.setSoLinger(true, 0);
    } catch (IOException ignored) {
      // closing without linger still ends the connection
    }
    closeQuietly(socket);
  }

  private static void closeQuietly(java.io.Closeable c) {
    try {
      c.close();
    } catch (IOException ignored) {
      // nothing to do: the connection is gone either way
    }
  }
}
