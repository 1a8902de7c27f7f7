package io.steelyard.registry;

import io.etcd.jetcd.Client;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Runs in a child JVM for {@link EtcdConnectionKeepaliveIT}: a registry-like client (reads, a
 * prefix watch, a lease kept alive) with jetcd configured as EtcdConnection was before it turned
 * off pings without calls. grpc-java logs a GOAWAY through java.util.logging, which in this JVM
 * prints to stderr, where the test reads it.
 *
 * <p>Arguments: endpoints (comma-separated), seconds to stay connected.
 */
final class IdleJetcdClient {

  private IdleJetcdClient() {}

  public static void main(String[] args) throws Exception {
    Client client =
        Client.builder()
            .endpoints(EtcdConnection.parseEndpoints(args[0]).toArray(java.net.URI[]::new))
            .keepaliveTime(Duration.ofSeconds(10))
            .keepaliveTimeout(Duration.ofSeconds(5))
            .keepaliveWithoutCalls(true) // jetcd's default, spelled out
            .build();
    EtcdConnectionKeepaliveIT.exercise(client);
    System.out.println("CONNECTED");
    System.out.flush();
    Thread.sleep(TimeUnit.SECONDS.toMillis(Long.parseLong(args[1])));
    client.close();
  }
}
