package io.steelyard.testkit;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.command.InspectContainerResponse;
import com.github.dockerjava.api.model.ExposedPort;
import com.github.dockerjava.api.model.Ports;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.Network;
import org.testcontainers.lifecycle.Startables;
import org.testcontainers.utility.DockerImageName;

/**
 * Members as Testcontainers on a private network; peers reach each other by container name.
 * Member stop/kill/start act on the same container (so its data survives) through the Docker
 * API, because {@link GenericContainer#stop()} removes the container. Docker may map a new host
 * port on start, so {@link DockerMember#clientEndpoint()} re-reads it.
 */
final class DockerClusterBackend implements ClusterBackend {

  private static final Logger log = LoggerFactory.getLogger(DockerClusterBackend.class);

  static final DockerImageName IMAGE = DockerImageName.parse("quay.io/coreos/etcd:v3.5.17");
  private static final int CLIENT_PORT = 2379;
  private static final int PEER_PORT = 2380;
  private static final Duration START_TIMEOUT = Duration.ofSeconds(60);

  private final Network network = Network.newNetwork();
  private final List<DockerMember> members = new ArrayList<>();

  DockerClusterBackend(int size, List<String> extraArgs) {
    String prefix = "steelyard-" + UUID.randomUUID().toString().substring(0, 8) + "-";
    List<String> names = new ArrayList<>();
    for (int i = 0; i < size; i++) {
      names.add("etcd" + i);
    }
    String token = prefix + "cluster";
    String initialCluster =
        names.stream()
            .map(n -> n + "=http://" + prefix + n + ":" + PEER_PORT)
            .collect(Collectors.joining(","));
    for (String name : names) {
      String host = prefix + name; // container name and network alias: unique across parallel builds
      List<String> command = new ArrayList<>();
      command.addAll(
          List.of(
              "/usr/local/bin/etcd",
              "--name", name,
              "--data-dir", "/etcd-data",
              "--listen-client-urls", "http://0.0.0.0:" + CLIENT_PORT,
              "--advertise-client-urls", "http://" + host + ":" + CLIENT_PORT,
              "--listen-peer-urls", "http://0.0.0.0:" + PEER_PORT,
              "--initial-advertise-peer-urls", "http://" + host + ":" + PEER_PORT,
              "--initial-cluster", initialCluster,
              "--initial-cluster-state", "new",
              "--initial-cluster-token", token));
      command.addAll(EtcdTuning.FLAGS);
      command.add(EtcdTuning.NO_FSYNC);
      command.addAll(extraArgs);
      GenericContainer<?> container =
          new GenericContainer<>(IMAGE)
              .withNetwork(network)
              .withNetworkAliases(host)
              .withCreateContainerCmdModifier(cmd -> cmd.withName(host))
              .withExposedPorts(CLIENT_PORT)
              .withCommand(command.toArray(String[]::new))
              .withStartupTimeout(START_TIMEOUT);
      members.add(new DockerMember(name, container));
    }
  }

  @Override
  public void start() {
    // In parallel: a member of a multi-member cluster serves only once a quorum is up.
    Startables.deepStart(members.stream().map(m -> m.container)).join();
    for (DockerMember member : members) {
      member.refreshEndpoint();
      EtcdHttp.await(
          "etcd container " + member.name(),
          () -> EtcdHttp.isHealthy(member.clientEndpoint()),
          member::isRunning,
          START_TIMEOUT,
          member::logTail);
    }
  }

  @Override
  public List<DockerMember> members() {
    return members;
  }

  @Override
  public void close() {
    for (DockerMember member : members) {
      try {
        member.container.stop();
      } catch (RuntimeException e) {
        log.warn("could not remove etcd container {}", member.name(), e);
      }
    }
    try {
      network.close();
    } catch (RuntimeException e) {
      log.warn("could not remove Docker network {}", network.getId(), e);
    }
  }

  private boolean quorumRunning() {
    long running = members.stream().filter(DockerMember::isRunning).count();
    return running + 1 > members.size() / 2;
  }

  final class DockerMember implements EtcdMember {
    private final String name;
    private final GenericContainer<?> container;
    private volatile URI endpoint;

    DockerMember(String name, GenericContainer<?> container) {
      this.name = name;
      this.container = container;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public URI clientEndpoint() {
      return endpoint;
    }

    @Override
    public boolean isRunning() {
      String id = container.getContainerId();
      if (id == null) {
        return false;
      }
      try {
        Boolean running = docker().inspectContainerCmd(id).exec().getState().getRunning();
        return Boolean.TRUE.equals(running);
      } catch (RuntimeException e) {
        return false;
      }
    }

    @Override
    public synchronized void stop() {
      if (isRunning()) {
        docker().stopContainerCmd(container.getContainerId()).withTimeout(10).exec();
      }
    }

    @Override
    public synchronized void kill() {
      if (isRunning()) {
        docker().killContainerCmd(container.getContainerId()).withSignal("SIGKILL").exec();
        EtcdHttp.await(name + " exit", () -> !isRunning(), () -> true, Duration.ofSeconds(10), () -> "");
      }
    }

    @Override
    public synchronized void start() {
      if (isRunning()) {
        return;
      }
      boolean quorum = quorumRunning();
      docker().startContainerCmd(container.getContainerId()).exec();
      refreshEndpoint();
      EtcdHttp.await(
          "etcd container " + name,
          // Without a quorum etcd serves nothing, and Docker's port proxy accepts connections
          // regardless, so a running container is all we can wait for.
          quorum ? () -> EtcdHttp.isHealthy(endpoint) : () -> true,
          this::isRunning,
          START_TIMEOUT,
          this::logTail);
    }

    @Override
    public void restart() {
      stop();
      start();
    }

    void refreshEndpoint() {
      InspectContainerResponse info = docker().inspectContainerCmd(container.getContainerId()).exec();
      Ports.Binding[] bindings = info.getNetworkSettings().getPorts().getBindings().get(ExposedPort.tcp(CLIENT_PORT));
      if (bindings == null || bindings.length == 0) {
        throw new IllegalStateException("etcd container " + name + " has no host port for " + CLIENT_PORT);
      }
      endpoint = URI.create("http://" + container.getHost() + ":" + bindings[0].getHostPortSpec());
    }

    String logTail() {
      try {
        String logs = container.getLogs();
        return "; container log tail:\n" + logs.substring(Math.max(0, logs.length() - 4000));
      } catch (RuntimeException e) {
        return "; container logs unavailable: " + e;
      }
    }

    @Override
    public String toString() {
      return name + "@" + endpoint;
    }

    private DockerClient docker() {
      return DockerClientFactory.instance().client();
    }
  }
}
