package io.steelyard.examples.spring;

import io.steelyard.examples.proto.GreeterGrpc;
import io.steelyard.examples.proto.HelloReply;
import io.steelyard.examples.proto.HelloRequest;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.springframework.grpc.client.GrpcChannelFactory;
import org.springframework.stereotype.Component;

/**
 * The client side: calls whichever greeters are registered as {@code greeter}, through the
 * channel {@code spring.grpc.client.channels.greeter} ({@code address: etcd:///greeter}, {@code
 * default-load-balancing-policy: weighted_random} in {@code application.yml}).
 */
@Component
class GreeterCaller {

  private final GreeterGrpc.GreeterBlockingStub greeter;

  GreeterCaller(GrpcChannelFactory channels) {
    this.greeter = GreeterGrpc.newBlockingStub(channels.createChannel("greeter"));
  }

  HelloReply hello(String name) {
    // 20 s: the first call also connects, which on a loaded 2-core CI machine took over 5 s.
    return greeter.withWaitForReady()
        .withDeadlineAfter(20, TimeUnit.SECONDS)
        .sayHello(HelloRequest.newBuilder().setName(name).build());
  }

  /** Makes {@code calls} calls and counts them by the address that answered. */
  Map<String, Integer> spread(int calls) {
    Map<String, Integer> byServer = new TreeMap<>();
    for (int i = 0; i < calls; i++) {
      byServer.merge(hello("spring").getServerAddress(), 1, Integer::sum);
    }
    return byServer;
  }
}
