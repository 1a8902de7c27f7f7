package io.steelyard.examples;

import com.google.common.util.concurrent.ThreadFactoryBuilder;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.steelyard.examples.proto.GreeterGrpc;
import io.steelyard.examples.proto.HelloReply;
import io.steelyard.examples.proto.HelloRequest;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Answers every call with a greeting that names this server's address; with {@link
 * GreeterFaults}, fails some calls and answers the others late (on a timer of its own, so a
 * delay holds no gRPC thread).
 */
final class GreeterService extends GreeterGrpc.GreeterImplBase {

  private final AtomicLong calls = new AtomicLong();
  private final GreeterFaults faults;
  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(
      new ThreadFactoryBuilder().setNameFormat("greeter-delay-%d").setDaemon(true).build());
  // Known only after the port is bound (port 0), and set before the server marks itself SERVING.
  private volatile String address = "";

  GreeterService(GreeterFaults faults) {
    this.faults = faults;
  }

  /** Stops the timer: delayed answers not sent yet are dropped (their calls are being cancelled). */
  void close() {
    timer.shutdownNow();
  }

  void address(String address) {
    this.address = address;
  }

  @Override
  public void sayHello(HelloRequest request, StreamObserver<HelloReply> responseObserver) {
    long n = calls.incrementAndGet();
    String self = address;
    if (faults.fails(n)) {
      responseObserver.onError(Status.UNAVAILABLE
          .withDescription("greeter " + self + " fails " + faults.failPercent() + "% of its calls")
          .asRuntimeException());
      return;
    }
    HelloReply reply = HelloReply.newBuilder()
        .setMessage("Hello " + request.getName() + " from " + self)
        .setServerAddress(self)
        .build();
    if (faults.delay().isZero()) {
      responseObserver.onNext(reply);
      responseObserver.onCompleted();
      return;
    }
    ServerCallStreamObserver<HelloReply> call = (ServerCallStreamObserver<HelloReply>) responseObserver;
    call.setOnCancelHandler(() -> {}); // a caller's deadline passed: nothing to answer
    timer.schedule(() -> {
      if (!call.isCancelled()) {
        call.onNext(reply);
        call.onCompleted();
      }
    }, faults.delay().toNanos(), TimeUnit.NANOSECONDS);
  }

  long calls() {
    return calls.get();
  }
}
