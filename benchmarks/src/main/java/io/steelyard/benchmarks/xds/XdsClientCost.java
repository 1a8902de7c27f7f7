package io.steelyard.benchmarks.xds;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.grpc.CallOptions;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCalls;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.Localities;
import io.steelyard.registry.ServiceInstance;
import io.steelyard.registry.ValueCodec;
import io.steelyard.registry.ValueFormat;
import java.io.ByteArrayInputStream;
import java.io.FileWriter;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * The two Java parts of {@code scripts/bench-xds-clients}, which measures what one real xDS
 * client pays for a service of many instances, one locality each:
 *
 * <pre>{@code
 * # COUNT instances of SERVICE at 127.0.A.B:PORT (one greeter listening on every loopback
 * # address answers them all), in zones a, b, c in turn
 * java -cp benchmarks.jar io.steelyard.benchmarks.xds.XdsClientCost register ETCD SERVICE COUNT PORT
 * # grpc-java's xDS client (GRPC_XDS_BOOTSTRAP): CALLS successful calls logged like the Python
 * # and Node clients of scripts/lib/xds-interop, then idle with the channel open until killed
 * java -cp benchmarks.jar io.steelyard.benchmarks.xds.XdsClientCost client SERVICE LOG CALLS
 * }</pre>
 */
public final class XdsClientCost {

  private static final MethodDescriptor<String, String> SAY_HELLO =
      MethodDescriptor.<String, String>newBuilder()
          .setType(MethodDescriptor.MethodType.UNARY)
          .setFullMethodName("steelyard.examples.Greeter/SayHello")
          .setRequestMarshaller(new HelloMarshaller(1))
          .setResponseMarshaller(new HelloMarshaller(2))
          .build();

  private XdsClientCost() {}

  public static void main(String[] args) throws Exception {
    if (args.length == 5 && args[0].equals("register")) {
      register(args[1], args[2], count(args[3]), count(args[4]));
    } else if (args.length == 4 && args[0].equals("client")) {
      client(args[1], args[2], count(args[3]));
    } else {
      System.err.println("usage: XdsClientCost register ETCD SERVICE COUNT PORT | client SERVICE LOG CALLS");
      System.exit(2);
    }
  }

  private static int count(String s) {
    try {
      return Integer.parseInt(s);
    } catch (NumberFormatException e) {
      System.err.println("XdsClientCost: '" + s + "' is not a count");
      System.exit(2);
      return 0;
    }
  }

  private static void register(String endpoints, String service, int count, int port) throws Exception {
    if (count < 1 || count > 65_000) {
      System.err.println("XdsClientCost: COUNT must be 1..65000");
      System.exit(2);
    }
    try (Client etcd = EtcdConnection.of(endpoints).connect()) {
      Semaphore inFlight = new Semaphore(200);
      List<CompletableFuture<?>> puts = new ArrayList<>();
      for (int i = 0; i < count; i++) {
        String address = "127.0." + (i / 250) + "." + (i % 250 + 1) + ":" + port;
        String zone = String.valueOf((char) ('a' + i % 3));
        ServiceInstance instance = new ServiceInstance(service, address, 1, Map.of(Localities.ZONE_KEY, zone));
        inFlight.acquire();
        puts.add(etcd.getKVClient()
            .put(KeyLayout.defaults().instanceKeyBytes(service, address),
                ByteSequence.from(ValueCodec.encode(instance, ValueFormat.JSON)))
            .whenComplete((r, e) -> inFlight.release()));
      }
      CompletableFuture.allOf(puts.toArray(new CompletableFuture<?>[0])).get(2, TimeUnit.MINUTES);
    }
  }

  private static void client(String service, String logPath, int calls) throws Exception {
    ManagedChannel channel =
        Grpc.newChannelBuilder("xds:///" + service, InsecureChannelCredentials.create()).build();
    try (PrintWriter log = new PrintWriter(new FileWriter(logPath, StandardCharsets.UTF_8))) {
      int ok = 0;
      while (ok < calls) {
        try {
          String address = ClientCalls.blockingUnaryCall(
              channel, SAY_HELLO, CallOptions.DEFAULT.withDeadlineAfter(5, TimeUnit.SECONDS), "java");
          log.printf("%d %s%n", System.currentTimeMillis(), address);
          ok++;
        } catch (StatusRuntimeException e) {
          log.printf("%d ERROR %s%n", System.currentTimeMillis(), e.getStatus().getCode());
          Thread.sleep(50);
        }
        log.flush();
      }
    }
    new CountDownLatch(1).await(); // idle with the channel open until the process is killed
  }

  /** HelloRequest.name (field 1) out, HelloReply.server_address (field 2) in, by hand. */
  private record HelloMarshaller(int field) implements MethodDescriptor.Marshaller<String> {
    @Override
    public InputStream stream(String value) {
      byte[] data = value.getBytes(StandardCharsets.UTF_8);
      byte[] out = new byte[data.length + 2];
      out[0] = (byte) (field << 3 | 2);
      out[1] = (byte) data.length; // names under 128 bytes
      System.arraycopy(data, 0, out, 2, data.length);
      return new ByteArrayInputStream(out);
    }

    @Override
    public String parse(InputStream stream) {
      try {
        byte[] buf = stream.readAllBytes();
        int i = 0;
        while (i < buf.length) {
          int key = buf[i++] & 0xff;
          int length = 0;
          int shift = 0;
          int b;
          do {
            b = buf[i++] & 0xff;
            length |= (b & 0x7f) << shift;
            shift += 7;
          } while ((b & 0x80) != 0);
          if (key >> 3 == field) {
            return new String(buf, i, length, StandardCharsets.UTF_8);
          }
          i += length;
        }
        return "";
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }
}
