/**
 * A real etcd for tests: {@link io.steelyard.testkit.EtcdCluster} (a JUnit 5 extension with 1 to 5
 * members that can be stopped, killed and restarted), {@link io.steelyard.testkit.EtcdMember}, and
 * {@link io.steelyard.testkit.EtcdLauncher} for scripts. Fault tools for the binary backend:
 * members can be frozen (SIGSTOP), {@linkplain io.steelyard.testkit.EtcdMember#partition
 * partitioned} behind {@link io.steelyard.testkit.FaultProxy}s, the cluster's quota filled and
 * freed, and the cluster restored from a snapshot. Members run in Docker via Testcontainers
 * when a Docker engine is available, otherwise from the local {@code etcd} binary (3.4+) on
 * loopback ports. Everything else in this package is package-private. The grpc-java fixtures that
 * several modules' tests share are in {@link io.steelyard.testkit.grpc}.
 *
 * <pre>{@code
 * @RegisterExtension
 * static final EtcdCluster etcd = EtcdCluster.builder().members(3).build();
 * }</pre>
 */
package io.steelyard.testkit;
