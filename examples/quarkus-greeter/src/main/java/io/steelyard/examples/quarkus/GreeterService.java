package io.steelyard.examples.quarkus;

import io.quarkus.grpc.GrpcService;
import io.smallrye.mutiny.Uni;
import io.steelyard.examples.proto.Greeter;
import io.steelyard.examples.proto.HelloReply;
import io.steelyard.examples.proto.HelloRequest;
import jakarta.inject.Inject;

/**
 * {@code Greeter/SayHello}: the gRPC side, on the same port as the REST side (the HTTP server
 * serves both), so the one registered address serves both transports.
 */
@GrpcService
public class GreeterService implements Greeter {

  @Inject Self self;

  @Override
  public Uni<HelloReply> sayHello(HelloRequest request) {
    return Uni.createFrom().item(HelloReply.newBuilder()
        .setMessage("Hello " + request.getName())
        .setServerAddress(self.address())
        .build());
  }
}
