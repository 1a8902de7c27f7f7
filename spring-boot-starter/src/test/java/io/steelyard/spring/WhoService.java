package io.steelyard.spring;

import io.grpc.BindableService;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.MethodDescriptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCalls;
import io.steelyard.testkit.grpc.CapacityBackend;
import java.util.concurrent.TimeUnit;

/**
 * A one-method gRPC service for the tests, without protobuf: {@code steelyard.test.Who/Name}
 * answers with the name of the application that serves it, so a client can count its calls per
 * backend.
 */
final class WhoService implements BindableService {

  static final MethodDescriptor<String, String> NAME =
      MethodDescriptor.<String, String>newBuilder()
          .setType(MethodDescriptor.MethodType.UNARY)
          .setFullMethodName(MethodDescriptor.generateFullMethodName("steelyard.test.Who", "Name"))
          .setRequestMarshaller(CapacityBackend.UTF8)
          .setResponseMarshaller(CapacityBackend.UTF8)
          .build();

  private final String name;

  WhoService(String name) {
    this.name = name;
  }

  @Override
  public ServerServiceDefinition bindService() {
    return ServerServiceDefinition.builder("steelyard.test.Who")
        .addMethod(NAME, ServerCalls.asyncUnaryCall((request, response) -> {
          response.onNext(name);
          response.onCompleted();
        }))
        .build();
  }

  /** Calls {@code channel} once, waiting for it to be ready, within 5 s. */
  static String call(Channel channel) {
    return ClientCalls.blockingUnaryCall(
        channel, NAME, CallOptions.DEFAULT.withWaitForReady().withDeadlineAfter(5, TimeUnit.SECONDS), "");
  }
}
