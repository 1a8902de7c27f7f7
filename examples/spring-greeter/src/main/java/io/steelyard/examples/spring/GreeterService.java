package io.steelyard.examples.spring;

import io.grpc.stub.StreamObserver;
import io.steelyard.examples.proto.GreeterGrpc;
import io.steelyard.examples.proto.HelloReply;
import io.steelyard.examples.proto.HelloRequest;
import io.steelyard.spring.GrpcServerRegistration;
import org.springframework.stereotype.Service;

/** Greeter/SayHello, answering with the address this instance registered, as the plain example does. */
@Service
class GreeterService extends GreeterGrpc.GreeterImplBase {

  private final GrpcServerRegistration registration;

  GreeterService(GrpcServerRegistration registration) {
    this.registration = registration;
  }

  @Override
  public void sayHello(HelloRequest request, StreamObserver<HelloReply> responseObserver) {
    String self = registration.address().orElse("");
    responseObserver.onNext(HelloReply.newBuilder()
        .setMessage("Hello " + request.getName() + " from " + self)
        .setServerAddress(self)
        .build());
    responseObserver.onCompleted();
  }
}
