package io.steelyard.examples;

import io.steelyard.registry.EtcdConnection;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/** The etcd flags of both example mains, with bin/steelyard's meaning (a picocli mixin). */
final class EtcdOptions {

  @Option(names = "--endpoints", paramLabel = "URLS",
      description = "etcd endpoints, comma-separated (default: $STEELYARD_ETCD_ENDPOINTS or "
          + EtcdConnection.DEFAULT_ENDPOINTS + ")")
  String endpoints = EtcdConnection.endpointsFrom(System.getenv());

  @Option(names = "--user", paramLabel = "USER:PASSWORD",
      description = "etcd user and password, as bin/steelyard's --user")
  String user;

  @Option(names = "--cacert", paramLabel = "FILE", description = "CA certificate to trust for TLS to etcd")
  Path caCert;

  @Option(names = "--cert", paramLabel = "FILE",
      description = "client certificate for mutual TLS to etcd (needs --cacert and --key)")
  Path cert;

  @Option(names = "--key", paramLabel = "FILE",
      description = "client private key for mutual TLS to etcd (needs --cacert and --cert)")
  Path key;

  /**
   * etcd from these flags.
   *
   * @throws IllegalArgumentException naming the bad flag
   */
  EtcdConnection connection() {
    return EtcdConnection.builder().endpoints(endpoints).securityOptions(user, caCert, cert, key).build();
  }
}
