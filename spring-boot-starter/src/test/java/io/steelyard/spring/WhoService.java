package io.steelyard.spring;

import io.grpc.BindableService;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.MethodDescriptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCalls;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
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
          .setRequestMarshaller(Utf8.INSTANCE)
          .setResponseMarshaller(Utf8.INSTANCE)
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

  private enum Utf8 implements MethodDescriptor.Marshaller<String> {
    INSTANCE;

    @Override
    public InputStream stream(String value) {
      return new ByteArrayInputStream(value.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public String parse(InputStream stream) {
      try {
        return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }
}
