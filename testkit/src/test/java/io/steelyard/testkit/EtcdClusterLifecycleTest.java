package io.steelyard.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class EtcdClusterLifecycleTest {

  @Test
  void closeLeavesNoProcessAndNoDataBehind() {
    List<BinaryMember> members;
    try (EtcdCluster etcd = EtcdCluster.builder().members(3).backend(EtcdCluster.Backend.BINARY).build()) {
      etcd.start();
      members = etcd.members().stream().map(BinaryMember.class::cast).collect(Collectors.toList());
      etcd.member(1).stop(); // a stopped member must not confuse cleanup
    }

    assertThat(members)
        .flatExtracting(m -> List.of(m.pid().orElseThrow(), m.watchdogPid().orElseThrow()))
        .allSatisfy(pid -> assertThat(ProcessHandle.of(pid).filter(ProcessHandle::isAlive)).isEmpty());
    assertThat(members.get(0).dir().getParent()).doesNotExist();
  }

  @Test
  void startAndCloseAreIdempotentAndCloseIsFinal() {
    EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build();
    etcd.start();
    String endpoints = etcd.endpoints();
    etcd.start();
    assertThat(etcd.endpoints()).isEqualTo(endpoints);

    etcd.close();
    etcd.close();

    assertThat(EtcdHttp.answers(java.net.URI.create(endpoints))).isFalse();
    assertThatThrownBy(etcd::start).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
  }

  @Test
  void membersOutsideOneToFiveAreRejectedNamingTheValue() {
    assertThatThrownBy(() -> EtcdCluster.builder().members(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("members: 0");
    assertThatThrownBy(() -> EtcdCluster.builder().members(6))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("members: 6");
  }

  @Test
  void missingBinarySaysWhatToInstall() {
    Path missing = Path.of("/nonexistent/steelyard/etcd");
    EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).etcdBinary(missing).build();

    assertThatThrownBy(etcd::start)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining(missing.toString())
        .hasMessageContaining("apt-get install -y etcd-server etcd-client")
        .hasMessageContaining("ETCD_BINARY")
        .hasMessageContaining("Docker");
  }

  @Test
  void failedStartReportsTheTailOfTheMemberLog() throws Exception {
    Path tmp = Path.of(System.getProperty("java.io.tmpdir"));
    long dirsBefore = countEtcdTempDirs(tmp);
    EtcdCluster etcd =
        EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).extraArgs("--no-such-flag").build();

    assertThatThrownBy(etcd::start)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("etcd0")
        .hasMessageContaining("etcd.log")
        .hasMessageContaining("no-such-flag");
    assertThat(countEtcdTempDirs(tmp)).isLessThanOrEqualTo(dirsBefore);
  }

  private static long countEtcdTempDirs(Path tmp) throws Exception {
    try (var list = Files.list(tmp)) {
      return list.filter(p -> p.getFileName().toString().startsWith("steelyard-etcd-")).count();
    }
  }
}
