package io.steelyard.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.testcontainers.DockerClientFactory;

/** Skipped where no Docker engine runs (this includes the project's CI machine). */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class DockerBackendTest {

  @Test
  void threeContainersElectALeaderAndSurviveItsLoss() {
    assumeTrue(DockerClientFactory.instance().isDockerAvailable(), "Docker is not available");
    try (EtcdCluster etcd = EtcdCluster.builder().members(3).backend(EtcdCluster.Backend.DOCKER).build()) {
      etcd.start();
      assertThat(etcd.clientEndpoints()).hasSize(3);
      int leader = etcd.leaderIndex();

      etcd.member(leader).kill();
      etcd.awaitHealthy(Duration.ofSeconds(15));
      assertThat(etcd.leaderIndex()).isNotEqualTo(leader);

      etcd.member(leader).start();
      etcd.awaitHealthy(Duration.ofSeconds(30));
      assertThat(etcd.members()).allMatch(EtcdMember::isRunning);
    }
  }
}
