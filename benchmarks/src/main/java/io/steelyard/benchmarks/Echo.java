package io.steelyard.benchmarks;

import io.grpc.MethodDescriptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.stub.ServerCalls;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;

/**
 * The unary method the benchmarks' plain servers answer (the soak's, the unary-call benchmark's):
 * the request's bytes back, no protobuf needed.
 */
public final class Echo {

  public static final String SERVICE = "steelyard.bench.Echo";

  private static final MethodDescriptor.Marshaller<byte[]> BYTES =
      new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(byte[] value) {
          return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
          try {
            return stream.readAllBytes();
          } catch (IOException e) {
            throw new IllegalStateException(e);
          }
        }
      };

  public static final MethodDescriptor<byte[], byte[]> METHOD =
      MethodDescriptor.<byte[], byte[]>newBuilder()
          .setType(MethodDescriptor.MethodType.UNARY)
          .setFullMethodName(SERVICE + "/Echo")
          .setRequestMarshaller(BYTES)
          .setResponseMarshaller(BYTES)
          .build();

  private Echo() {}

  public static ServerServiceDefinition service() {
    return ServerServiceDefinition.builder(SERVICE)
        .addMethod(METHOD, ServerCalls.asyncUnaryCall((request, response) -> {
          response.onNext(request);
          response.onCompleted();
        }))
        .build();
  }
}
