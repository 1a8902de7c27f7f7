package io.steelyard.agent;

import static org.assertj.core.api.Assertions.assertThat;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.PutOption;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.internal.EtcdCalls;
import io.steelyard.testkit.EtcdCluster;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The guarded writes of a registration's own key, against a real etcd. */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class OwnKeyIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  @RegisterExtension
  @Order(EtcdProbe.AFTER_THE_CLUSTER)
  static final EtcdProbe probe = EtcdProbe.of(etcd);

  /** Generous: a lease grant on a loaded 2-core machine took more than 5 s. */
  private static final Duration BOUND = Duration.ofSeconds(30);

  private static final EtcdCalls CALLS = new EtcdCalls(BOUND);

  private static long grant() throws Exception {
    return probe.client.getLeaseClient().grant(30).get(BOUND.toSeconds(), TimeUnit.SECONDS).getID();
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void aPutExpectingAnOldRevisionLearnsTheCurrentOneAndWrites() throws Exception {
    OwnKey key = new OwnKey(KeyLayout.defaults(), "own", "127.0.0.1:7001");
    long foreign = grant();
    probe.client.getKVClient()
        .put(key.bytes(), ByteSequence.from(utf8("127.0.0.1:7001|9")), PutOption.builder().withLeaseId(foreign).build())
        .get(BOUND.toSeconds(), TimeUnit.SECONDS);
    long ours = grant();

    long revision = key.put(CALLS, probe.client, utf8("127.0.0.1:7001|1"), ours, 0).get(BOUND.toSeconds(), TimeUnit.SECONDS);

    assertThat(probe.value(key.toString())).isEqualTo("127.0.0.1:7001|1");
    assertThat(probe.lease(key.toString())).isEqualTo(ours);
    assertThat(probe.get(key.toString()).orElseThrow().getModRevision()).isEqualTo(revision);
  }

  /**
   * What a put that timed out and reaches etcd after the agent moved on looks like to etcd: a
   * transaction guarded by the revision the agent expected then. It finds the key changed and
   * writes nothing, so the newer registration stands.
   */
  @Test
  void aLatePutGuardedByAnOlderRevisionChangesNothing() throws Exception {
    OwnKey key = new OwnKey(KeyLayout.defaults(), "own", "127.0.0.1:7002");
    long abandoned = grant();
    long current = grant();
    key.put(CALLS, probe.client, utf8("127.0.0.1:7002|1"), current, 0).get(BOUND.toSeconds(), TimeUnit.SECONDS);

    boolean applied =
        probe.client.getKVClient().txn()
            .If(new Cmp(key.bytes(), Cmp.Op.EQUAL, CmpTarget.modRevision(0)))
            .Then(Op.put(key.bytes(), ByteSequence.from(utf8("127.0.0.1:7002|1")),
                PutOption.builder().withLeaseId(abandoned).build()))
            .commit().get(BOUND.toSeconds(), TimeUnit.SECONDS).isSucceeded();
    probe.revoke(abandoned); // what the agent does with a lease it gave up on

    assertThat(applied).isFalse();
    assertThat(probe.lease(key.toString())).isEqualTo(current);
  }

  @Test
  void deleteIfHeldByRemovesTheKeyAndItsDrainNoteOnlyWhenTheLeaseIsOurs() throws Exception {
    OwnKey key = new OwnKey(KeyLayout.defaults(), "own", "127.0.0.1:7003");
    long ours = grant();
    key.put(CALLS, probe.client, utf8("127.0.0.1:7003|0"), ours, 0).get(BOUND.toSeconds(), TimeUnit.SECONDS);
    String note = KeyLayout.defaults().drainNoteKey("own", "127.0.0.1:7003");
    probe.client.getKVClient()
        .put(EtcdProbe.bytes(note), EtcdProbe.bytes("4"), PutOption.builder().withLeaseId(ours).build())
        .get(BOUND.toSeconds(), TimeUnit.SECONDS);

    assertThat(key.deleteIfHeldBy(CALLS, probe.client, Set.of(grant())).get(BOUND.toSeconds(), TimeUnit.SECONDS)).isFalse();
    assertThat(probe.get(key.toString())).isPresent();

    assertThat(key.deleteIfHeldBy(CALLS, probe.client, Set.of(ours)).get(BOUND.toSeconds(), TimeUnit.SECONDS)).isTrue();
    assertThat(probe.get(key.toString())).isEmpty();
    assertThat(probe.get(note)).isEmpty();
    assertThat(probe.ttl(ours)).isPositive(); // the lease itself lives on
  }
}
