package io.steelyard.it;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.steelyard.examples.GreeterClient;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * A steady stream of calls from a few threads, each calling back to back, counting successes per
 * answering backend and failures per status code at the caller.
 */
final class Load implements AutoCloseable {

  private final GreeterClient client;
  private final List<Thread> threads = new ArrayList<>();
  private final ConcurrentHashMap<String, LongAdder> calls = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, LongAdder> failures = new ConcurrentHashMap<>();
  private final List<Status> failedStatuses = new CopyOnWriteArrayList<>();
  private final AtomicLong succeeded = new AtomicLong();
  private volatile boolean running = true;

  private Load(GreeterClient client) {
    this.client = client;
  }

  /** Starts {@code threads} callers. */
  static Load start(GreeterClient client, int threads) {
    Load load = new Load(client);
    for (int i = 0; i < threads; i++) {
      Thread t = new Thread(load::run, "load-" + i);
      t.setDaemon(true);
      load.threads.add(t);
      t.start();
    }
    return load;
  }

  private void run() {
    while (running) {
      try {
        String backend = client.sayHello("it").getServerAddress();
        calls.computeIfAbsent(backend, k -> new LongAdder()).increment();
        succeeded.incrementAndGet();
      } catch (StatusRuntimeException e) {
        if (running) {
          failedStatuses.add(e.getStatus());
          failures.computeIfAbsent(
                  e.getStatus().getCode() + ": " + e.getStatus().getDescription(),
                  k -> new LongAdder())
              .increment();
        }
      }
    }
  }

  long succeeded() {
    return succeeded.get();
  }

  long failed() {
    return failures.values().stream().mapToLong(LongAdder::sum).sum();
  }

  /** Failures so far, by status code and description. */
  Map<String, Long> failures() {
    Map<String, Long> out = new TreeMap<>();
    failures.forEach((k, v) -> out.put(k, v.sum()));
    return out;
  }

  /** The status of every failed call so far, causes included. */
  List<Status> failedStatuses() {
    return List.copyOf(failedStatuses);
  }

  /** Successful calls so far, by the address of the backend that answered. */
  Map<String, Long> callsByBackend() {
    Map<String, Long> out = new TreeMap<>();
    calls.forEach((k, v) -> out.put(k, v.sum()));
    return out;
  }

  long callsTo(String backend) {
    LongAdder a = calls.get(backend);
    return a == null ? 0 : a.sum();
  }

  /** Stops the callers and waits for the calls in flight to end. */
  @Override
  public void close() throws InterruptedException {
    running = false;
    for (Thread t : threads) {
      t.join(10_000);
    }
  }
}
