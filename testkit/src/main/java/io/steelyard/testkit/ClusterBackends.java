package io.steelyard.testkit;

import java.nio.file.Path;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.testcontainers.DockerClientFactory;

/**
 * Which {@link ClusterBackend} runs a cluster's members: the one asked for, or with {@link
 * EtcdCluster.Backend#AUTO} Docker where an engine answers (and TLS is not asked for), else the
 * local etcd binary; and the check that a feature's backend is the binary one.
 */
final class ClusterBackends {

  private static final Logger log = LoggerFactory.getLogger(ClusterBackends.class);

  private ClusterBackends() {}

  /**
   * A backend of {@code size} members, not started.
   *
   * @throws IllegalStateException when none can run them (the message says what to install)
   */
  static ClusterBackend create(
      EtcdCluster.Backend requested, int size, Path etcdBinary, List<String> extraArgs, ClusterTls tls) {
    switch (requested) {
      case BINARY:
        return new BinaryClusterBackend(size, BinaryClusterBackend.resolveBinary(etcdBinary), extraArgs, tls);
      case DOCKER:
        if (tls != null) {
          throw new IllegalStateException("TLS clusters need the binary backend");
        }
        return new DockerClusterBackend(size, extraArgs);
      case AUTO:
      default:
        if (tls == null && dockerAvailable()) {
          return new DockerClusterBackend(size, extraArgs);
        }
        if (etcdBinary == null && System.getenv("ETCD_BINARY") == null && BinaryClusterBackend.findOnPath() == null) {
          throw new IllegalStateException(
              "no etcd available: Docker is not running and there is no etcd binary. "
                  + BinaryClusterBackend.INSTALL_HINT);
        }
        return new BinaryClusterBackend(size, BinaryClusterBackend.resolveBinary(etcdBinary), extraArgs, tls);
    }
  }

  /** {@code b} as the binary backend that {@code what} needs; throws for another. */
  static BinaryClusterBackend binary(String what, ClusterBackend b) {
    if (b instanceof BinaryClusterBackend binary) {
      return binary;
    }
    throw new UnsupportedOperationException(what + ": needs the binary backend (EtcdCluster.Backend.BINARY)");
  }

  private static boolean dockerAvailable() {
    try {
      return DockerClientFactory.instance().isDockerAvailable();
    } catch (RuntimeException | LinkageError e) {
      log.debug("Docker is not usable", e);
      return false;
    }
  }
}
