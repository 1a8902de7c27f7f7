package io.steelyard.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
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
  void memberOfAClosedClusterCannotStart() {
    EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build();
    etcd.start();
    EtcdMember member = etcd.member(0);
    etcd.close();

    assertThatThrownBy(member::start).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
    assertThat(member.isRunning()).isFalse();
  }

  @Test
  void portTakenBetweenProbeAndLaunchIsRetriedWithNewPorts() throws Exception {
    BinaryClusterBackend backend =
        new BinaryClusterBackend(1, BinaryClusterBackend.resolveBinary(null), List.of());
    try (ServerSocket squatter = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      backend.presetPorts(squatter.getLocalPort());

      backend.start();

      assertThat(backend.members().get(0).clientEndpoint().getPort()).isNotEqualTo(squatter.getLocalPort());
      assertThat(EtcdHttp.isHealthy(backend.members().get(0).clientEndpoint())).isTrue();
    } finally {
      backend.close();
    }
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
  void failedStartReportsTheTailOfTheMemberLogAndCleansUp() {
    EtcdCluster etcd =
        EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).extraArgs("--no-such-flag").build();

    Throwable failure = catchThrowable(etcd::start);

    assertThat(failure)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("etcd0")
        .hasMessageContaining("no-such-flag");
    // /tmp is shared with concurrent builds, so check this cluster's own directory, named in the message.
    Matcher log = Pattern.compile("(/\\S+)/etcd0/etcd\\.log").matcher(failure.getMessage());
    assertThat(log.find()).as("log path in %s", failure.getMessage()).isTrue();
    assertThat(Path.of(log.group(1))).doesNotExist();
  }
}
