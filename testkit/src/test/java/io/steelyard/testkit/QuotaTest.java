package io.steelyard.testkit;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import java.net.URI;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** fillQuota/freeQuota on a real 3-member cluster with an 8 MiB quota: what NOSPACE allows. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class QuotaTest {

  @RegisterExtension
  static final EtcdCluster etcd =
      EtcdCluster.builder().members(3).backend(EtcdCluster.Backend.BINARY).quotaBackendBytes(8L << 20).build();

  @Test
  void fullQuotaRefusesWritesAndGrantsButNotReadsDeletesOrKeepalivesUntilFreed() throws Exception {
    try (Client client = Client.builder().endpoints(etcd.clientEndpoints().toArray(URI[]::new)).build()) {
      client.getKVClient().put(bytes("k"), bytes("before")).get(10, TimeUnit.SECONDS);
      client.getKVClient().put(bytes("doomed"), bytes("x")).get(10, TimeUnit.SECONDS);
      long lease = client.getLeaseClient().grant(30).get(10, TimeUnit.SECONDS).getID();

      assertThat(etcd.fillQuota()).isPositive();

      assertThat(etcd.alarms()).contains("NOSPACE");
      assertThatThrownBy(() -> client.getKVClient().put(bytes("k"), bytes("during")).get(10, TimeUnit.SECONDS))
          .isInstanceOf(ExecutionException.class)
          .hasMessageContaining("database space exceeded");
      assertThatThrownBy(() -> client.getLeaseClient().grant(30).get(10, TimeUnit.SECONDS))
          .hasMessageContaining("database space exceeded");
      assertThat(client.getLeaseClient().keepAliveOnce(lease).get(10, TimeUnit.SECONDS).getTTL())
          .as("keepalives still work: leases, and the keys they hold, survive NOSPACE")
          .isPositive();
      assertThat(client.getKVClient().get(bytes("k")).get(10, TimeUnit.SECONDS).getKvs().get(0).getValue())
          .isEqualTo(bytes("before"));
      assertThat(client.getKVClient().delete(bytes("doomed")).get(10, TimeUnit.SECONDS).getDeleted()).isEqualTo(1);

      etcd.freeQuota();

      assertThat(etcd.alarms()).isEmpty();
      client.getKVClient().put(bytes("k"), bytes("after")).get(10, TimeUnit.SECONDS);
      assertThat(client.getLeaseClient().grant(30).get(10, TimeUnit.SECONDS).getID()).isNotZero();
    }
  }

  @Test
  void fillingAClusterWithTheDefaultQuotaIsRefused() {
    try (EtcdCluster big = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build()) {
      big.start();
      assertThatThrownBy(big::fillQuota).isInstanceOf(IllegalStateException.class).hasMessageContaining("quotaBackendBytes");
    }
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, UTF_8);
  }
}
