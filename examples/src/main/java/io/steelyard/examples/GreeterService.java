package io.steelyard.examples;

import io.grpc.stub.StreamObserver;
import io.steelyard.examples.proto.GreeterGrpc;
import io.steelyard.examples.proto.HelloReply;
import io.steelyard.examples.proto.HelloRequest;
import java.util.concurrent.atomic.AtomicLong;

/** Answers every call with a greeting that names this server's address. */
final class GreeterService extends GreeterGrpc.GreeterImplBase {

  private final AtomicLong calls = new AtomicLong();
  // Known only after the port is bound (port 0), and set before the server marks itself SERVING.
  private volatile String address = "";

  void address(String address) {
    this.address = address;
  }

  @Override
  public void sayHello(HelloRequest request, StreamObserver<HelloReply> responseObserver) {
    calls.incrementAndGet();
    String self = address;
    responseObserver.onNext(
        HelloReply.newBuilder()
            .setMessage("Hello " + request.getName() + " from " + self)
            .setServerAddress(self)
            .build());
    responseObserver.onCompleted();
  }

  long calls() {
    return calls.get();
  }
}
