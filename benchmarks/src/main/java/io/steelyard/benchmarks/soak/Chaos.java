package io.steelyard.benchmarks.soak;

import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.EtcdMember;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * What the soak does to etcd, on a thread of its own: member {@code k % 3} restarted (SIGTERM,
 * start, healthy) at every {@code k * restartEvery}, and the leader frozen (SIGSTOP) once for
 * {@code freeze} at {@code freezeAt}. Each fault is recorded with when it began and when the
 * cluster was whole again.
 */
final class Chaos implements Runnable {

  /** One fault: {@code kind} restart or freeze, from {@code startNanos} until the cluster was healthy. */
  record Event(String kind, String member, boolean leader, long startNanos, long endNanos) {
    String describe(long t0) {
      return String.format(Locale.ROOT, "%s of %s%s at %.1f s, healthy again at %.1f s", kind, member,
          leader ? " (the leader)" : "", (startNanos - t0) / 1e9, (endNanos - t0) / 1e9);
    }
  }

  private record Planned(String kind, long atNanos, int member) {}

  private final EtcdCluster etcd;
  private final PrintStream progress;
  private final long t0;
  private final Duration freeze;
  private final List<Planned> plan = new ArrayList<>();
  private final List<Event> events = new ArrayList<>(); // guarded by itself

  Chaos(EtcdCluster etcd, long t0, SoakBench.Settings s, PrintStream progress) {
    this.etcd = etcd;
    this.progress = progress;
    this.t0 = t0;
    this.freeze = Duration.ofSeconds(s.freezeSeconds());
    List<Planned> all = new ArrayList<>();
    int k = 0;
    for (long at = s.restartEverySeconds(); at <= s.loadSeconds() - 15; at += s.restartEverySeconds()) {
      all.add(new Planned("restart", TimeUnit.SECONDS.toNanos(at), k++ % etcd.size()));
    }
    if (s.freezeAtSeconds() > 0 && s.freezeAtSeconds() <= s.loadSeconds() - 15) {
      all.add(new Planned("freeze", TimeUnit.SECONDS.toNanos(s.freezeAtSeconds()), -1));
    }
    all.sort((a, b) -> Long.compare(a.atNanos, b.atNanos));
    plan.addAll(all);
  }

  @Override
  public void run() {
    try {
      for (Planned p : plan) {
        long wait = t0 + p.atNanos - System.nanoTime();
        if (wait > 0) {
          TimeUnit.NANOSECONDS.sleep(wait);
        }
        int index = p.member >= 0 ? p.member : etcd.leaderIndex();
        EtcdMember m = etcd.member(index);
        boolean leader = etcd.leaderIndex() == index;
        long start = System.nanoTime();
        if (p.kind.equals("restart")) {
          m.restart();
        } else {
          m.freeze();
          TimeUnit.NANOSECONDS.sleep(start + freeze.toNanos() - System.nanoTime());
          m.resume();
        }
        etcd.awaitHealthy(Duration.ofSeconds(60));
        Event e = new Event(p.kind, m.name(), leader, start, System.nanoTime());
        synchronized (events) {
          events.add(e);
        }
        progress.println("   " + e.describe(t0));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  List<Event> events() {
    synchronized (events) {
      return List.copyOf(events);
    }
  }

  int planned() {
    return plan.size();
  }
}
