package io.steelyard.benchmarks.soak;

import static io.steelyard.benchmarks.BenchArgs.intArg;
import static io.steelyard.benchmarks.BenchArgs.stringArg;

import io.etcd.jetcd.Client;
import io.grpc.Server;
import io.grpc.netty.NettyServerBuilder;
import io.steelyard.agent.RegisteredServer;
import io.steelyard.benchmarks.Echo;
import io.steelyard.agent.RegistrationListener;
import io.steelyard.agent.RegistrationState;
import io.steelyard.agent.ServiceRegistration;
import io.steelyard.agent.SharedLease;
import io.steelyard.registry.EtcdConnection;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The soak's server side, a JVM of its own: {@code --services} services of {@code --per-service}
 * servers each, every server a real Netty gRPC server on loopback answering {@link Echo} and tied
 * to a {@link ServiceRegistration} on one {@link SharedLease} by a {@link RegisteredServer}. After
 * {@code GO}: every second one server leaves (its {@link RegisteredServer#shutdown()}: deregister,
 * drain, GOAWAY) and a new one joins the same service; {@code --weights-per-second} weight
 * changes, each one more than the server's last, so a weight never goes back.
 *
 * <p>Commands on stdin (answers end with {@code END}): {@code SAMPLE} answers {@code SAMPLE
 * <heapAfterGc> <threads> <fds> <pooledThreads> <live> <joins> <leaves> <issued> <acked> <failed> <recoveries>};
 * {@code QUIESCE} stops the churn and the changes, waits for what is under way, and answers one
 * {@code LIVE <service> <address> <believed> <lastIssued> <lastAcked> <state>} per server and one
 * {@code LEFT <address> <startNanos> <endNanos> <clean>} per server gone (its shutdown from the
 * deregistration to the end, and whether every call finished within the grace period);
 * {@code EXIT} shuts everything down.
 */
public final class SoakAgent {

  private final String prefix;
  private final SharedLease lease;
  private final Random random = new Random(42);
  private final List<Member> live = new ArrayList<>(); // guarded by this
  private final ExecutorService leaving = Executors.newFixedThreadPool(4);
  private final AtomicInteger leavesUnderWay = new AtomicInteger();
  private final AtomicInteger changesUnderWay = new AtomicInteger();
  private final AtomicLong joins = new AtomicLong();
  private final AtomicLong leaves = new AtomicLong();
  private final AtomicLong issued = new AtomicLong();
  private final AtomicLong acked = new AtomicLong();
  private final AtomicLong failed = new AtomicLong();
  private final AtomicLong recoveries = new AtomicLong();
  private final List<String> leaveLines = new ArrayList<>(); // guarded by itself
  private int cursor; // guarded by this: the next server whose weight changes

  /** One server and what the soak asked of its weight. */
  private static final class Member {
    final String service;
    final RegisteredServer server;
    int lastIssued = 100; // guarded by the agent
    int lastAcked = 100; // guarded by the agent; weights only grow, so the highest acked is the latest

    Member(String service, RegisteredServer server) {
      this.service = service;
      this.server = server;
    }

    ServiceRegistration registration() {
      return server.registration();
    }
  }

  private SoakAgent(String prefix, SharedLease lease) {
    this.prefix = prefix;
    this.lease = lease;
  }

  public static void main(String[] args) throws Exception {
    String endpoints = stringArg(args, "--endpoints", null);
    String prefix = stringArg(args, "--service-prefix", "soak");
    int services = intArg(args, "--services", 10);
    int perService = intArg(args, "--per-service", 20);
    int weightsPerSecond = intArg(args, "--weights-per-second", 20);
    PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));

    Client client = EtcdConnection.of(endpoints).connect();
    SharedLease lease = SharedLease.builder(client).build();
    SoakAgent agent = new SoakAgent(prefix, lease);
    for (int s = 0; s < services; s++) {
      for (int i = 0; i < perService; i++) {
        agent.join(SoakBench.service(prefix, s));
      }
    }
    synchronized (agent) {
      for (Member m : agent.live) {
        m.registration().registered().get(2, TimeUnit.MINUTES);
      }
    }
    out.println("READY");
    out.flush();

    ScheduledExecutorService ticker = Executors.newSingleThreadScheduledExecutor();
    for (String line; (line = in.readLine()) != null; ) {
      switch (line.trim()) {
        case "GO" -> {
          ticker.scheduleAtFixedRate(agent::churn, 1, 1, TimeUnit.SECONDS);
          ticker.scheduleAtFixedRate(agent::changeWeight, 0, 1_000_000 / weightsPerSecond, TimeUnit.MICROSECONDS);
          out.println("END");
        }
        case "SAMPLE" -> out.println("SAMPLE " + ChildProcess.selfSample() + " " + agent.counters() + "\nEND");
        case "QUIESCE" -> {
          ticker.shutdown();
          ticker.awaitTermination(30, TimeUnit.SECONDS);
          agent.quiesce().forEach(out::println);
          out.println("END");
        }
        case "EXIT" -> {
          agent.closeAll();
          lease.close();
          client.close();
          out.flush();
          System.exit(0);
        }
        default -> out.println("UNKNOWN " + line + "\nEND");
      }
      out.flush();
    }
    System.exit(3); // the parent went away
  }

  private void join(String service) throws IOException {
    Server server = NettyServerBuilder.forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
        .addService(Echo.service())
        .build()
        .start();
    String address = "127.0.0.1:" + server.getPort();
    ServiceRegistration reg = ServiceRegistration.builder(lease, service, address).weight(100).build();
    reg.addListener(new Recoveries(recoveries));
    RegisteredServer rs = RegisteredServer.builder(server, reg).build().start();
    synchronized (this) {
      live.add(new Member(service, rs));
    }
    joins.incrementAndGet();
  }

  /** One server leaves (in the background: its shutdown drains for a second) and one joins. */
  private void churn() {
    Member leaver;
    synchronized (this) {
      leaver = live.remove(random.nextInt(live.size()));
    }
    leavesUnderWay.incrementAndGet();
    leaving.execute(() -> {
      try {
        long start = System.nanoTime();
        boolean clean = leaver.server.shutdown();
        synchronized (leaveLines) {
          leaveLines.add(String.format(Locale.ROOT, "LEFT %s %d %d %s", leaver.registration().address(), start,
              System.nanoTime(), clean));
        }
        leaves.incrementAndGet();
      } finally {
        leavesUnderWay.decrementAndGet();
      }
    });
    try {
      join(leaver.service);
    } catch (IOException | RuntimeException e) {
      System.err.println("soak agent: a server could not join " + leaver.service + ": " + e);
    }
  }

  private void changeWeight() {
    Member m;
    int weight;
    synchronized (this) {
      m = live.get(cursor++ % live.size());
      weight = ++m.lastIssued;
    }
    issued.incrementAndGet();
    changesUnderWay.incrementAndGet();
    m.registration().setWeight(weight).whenComplete((v, e) -> {
      if (e == null) {
        synchronized (this) {
          m.lastAcked = Math.max(m.lastAcked, weight);
        }
        acked.incrementAndGet();
      } else {
        failed.incrementAndGet();
      }
      changesUnderWay.decrementAndGet();
    });
  }

  private String counters() {
    int n;
    synchronized (this) {
      n = live.size();
    }
    return String.format(Locale.ROOT, "%d %d %d %d %d %d %d", n, joins.get(), leaves.get(), issued.get(),
        acked.get(), failed.get(), recoveries.get());
  }

  /** Waits for the leaves and weight changes under way and for every server to be registered. */
  private List<String> quiesce() throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
    while ((leavesUnderWay.get() > 0 || changesUnderWay.get() > 0 || !allRegistered())
        && System.nanoTime() < deadline) {
      Thread.sleep(50); // a harness polling its own counters, bounded by the deadline
    }
    List<String> lines = new ArrayList<>();
    synchronized (this) {
      for (Member m : live) {
        ServiceRegistration r = m.registration();
        lines.add(String.format(Locale.ROOT, "LIVE %s %s %d %d %d %s", m.service, r.address(), r.weight(),
            m.lastIssued, m.lastAcked, r.state()));
      }
    }
    synchronized (leaveLines) {
      lines.addAll(leaveLines);
    }
    lines.add(String.format(Locale.ROOT, "UNDERWAY %d %d", leavesUnderWay.get(), changesUnderWay.get()));
    return lines;
  }

  private synchronized boolean allRegistered() {
    return live.stream().allMatch(m -> m.registration().state() == RegistrationState.REGISTERED);
  }

  private void closeAll() {
    List<Member> all;
    synchronized (this) {
      all = new ArrayList<>(live);
      live.clear();
    }
    all.parallelStream().forEach(m -> m.server.server().shutdownNow());
    all.parallelStream().forEach(m -> m.registration().close());
    leaving.shutdownNow();
  }

  /** Counts every time a registration leaves REGISTERED for trouble (a lost lease, a refusal). */
  private record Recoveries(AtomicLong count) implements RegistrationListener {
    @Override
    public void onStateChanged(RegistrationState state) {
      if (state == RegistrationState.RECOVERING || state == RegistrationState.DELETED_BY_OPERATOR
          || state == RegistrationState.REFUSED) {
        count.incrementAndGet();
      }
    }
  }
}
