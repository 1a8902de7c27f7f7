package io.steelyard.it.faults;

import io.grpc.Attributes;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ClientStreamTracer;
import io.grpc.Grpc;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import io.steelyard.examples.proto.GreeterGrpc;
import io.steelyard.examples.proto.HelloReply;
import io.steelyard.examples.proto.HelloRequest;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import javax.annotation.Nullable;

/**
 * A steady stream of asynchronous calls, one every {@code period} whatever the answers, without
 * wait-for-ready: a call finds a ready backend at once or fails. Each call remembers the backend
 * its stream was opened to (from the transport, so failed calls too), which lets a test show
 * that the only failures were calls in flight to a server that died.
 */
final class PacedLoad implements AutoCloseable {

  /** A call that failed: when it started and ended, where its stream went (null: never sent), why. */
  record Failure(long startNanos, long endNanos, @Nullable String backend, Status status) {}

  private final String name;
  private final GreeterGrpc.GreeterStub stub;
  private final Duration deadline;
  private final ScheduledExecutorService timer;
  private final AtomicLong sent = new AtomicLong();
  private final AtomicLong succeeded = new AtomicLong();
  private final AtomicLong inFlight = new AtomicLong();
  private final Object idle = new Object();
  private final ConcurrentHashMap<String, LongAdder> byBackend = new ConcurrentHashMap<>();
  private final List<Failure> failures = new CopyOnWriteArrayList<>();

  private PacedLoad(String name, ManagedChannel channel, Duration deadline) {
    this.name = name;
    this.stub = GreeterGrpc.newStub(channel);
    this.deadline = deadline;
    this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "load-" + name);
      t.setDaemon(true);
      return t;
    });
  }

  static PacedLoad start(String name, ManagedChannel channel, Duration period, Duration deadline) {
    PacedLoad load = new PacedLoad(name, channel, deadline);
    load.timer.scheduleAtFixedRate(load::fire, 0, period.toNanos(), TimeUnit.NANOSECONDS);
    return load;
  }

  private void fire() {
    long start = System.nanoTime();
    AtomicReference<String> backend = new AtomicReference<>();
    sent.incrementAndGet();
    inFlight.incrementAndGet();
    ClientStreamTracer.Factory tracer = new ClientStreamTracer.Factory() {
      @Override
      public ClientStreamTracer newClientStreamTracer(ClientStreamTracer.StreamInfo info, Metadata headers) {
        return new ClientStreamTracer() {
          @Override
          public void streamCreated(Attributes transportAttrs, Metadata headers) {
            backend.set(address(transportAttrs.get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR)));
          }
        };
      }
    };
    ClientInterceptor tracing = new ClientInterceptor() {
      @Override
      public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
        return next.newCall(method, options.withStreamTracerFactory(tracer));
      }
    };
    stub.withDeadlineAfter(deadline.toMillis(), TimeUnit.MILLISECONDS)
        .withInterceptors(tracing)
        .sayHello(HelloRequest.newBuilder().setName(name).build(), new StreamObserver<HelloReply>() {
          @Override
          public void onNext(HelloReply reply) {
            byBackend.computeIfAbsent(reply.getServerAddress(), k -> new LongAdder()).increment();
            succeeded.incrementAndGet();
          }

          @Override
          public void onError(Throwable t) {
            failures.add(new Failure(start, System.nanoTime(), backend.get(), Status.fromThrowable(t)));
            ended();
          }

          @Override
          public void onCompleted() {
            ended();
          }
        });
  }

  private void ended() {
    if (inFlight.decrementAndGet() == 0) {
      synchronized (idle) {
        idle.notifyAll();
      }
    }
  }

  @Nullable
  private static String address(@Nullable SocketAddress a) {
    if (a instanceof InetSocketAddress i) {
      return i.getAddress().getHostAddress() + ":" + i.getPort();
    }
    return a == null ? null : a.toString();
  }

  String name() {
    return name;
  }

  long sent() {
    return sent.get();
  }

  long succeeded() {
    return succeeded.get();
  }

  List<Failure> failures() {
    return List.copyOf(failures);
  }

  long callsTo(String backend) {
    LongAdder a = byBackend.get(backend);
    return a == null ? 0 : a.sum();
  }

  Map<String, Long> callsByBackend() {
    Map<String, Long> out = new TreeMap<>();
    byBackend.forEach((k, v) -> out.put(k, v.sum()));
    return out;
  }

  /** Stops sending and waits (bounded by the deadline) for the calls in flight to end. */
  @Override
  public void close() throws InterruptedException {
    timer.shutdownNow();
    timer.awaitTermination(5, TimeUnit.SECONDS);
    long until = System.nanoTime() + deadline.plusSeconds(1).toNanos();
    synchronized (idle) {
      while (inFlight.get() > 0 && System.nanoTime() < until) {
        idle.wait(100);
      }
    }
  }
}
