package io.steelyard.discovery;

import static io.steelyard.discovery.Etcd.put;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.Client;
import io.grpc.EquivalentAddressGroup;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.InternalFeatureFlags;
import io.grpc.ManagedChannel;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.FreePorts;
import io.steelyard.testkit.grpc.RecordingLoadBalancerProvider;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Each documented target form through a real grpc-java 1.85 channel (its own target parsing, RFC
 * 3986 by default) to a real etcd: what a user types is what works.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TargetFormsIT {

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build();

  private static Client writer;
  private static RecordingLoadBalancerProvider recording;
  private final List<ManagedChannel> channels = new ArrayList<>();

  @BeforeAll
  static void setUp() {
    recording = RecordingLoadBalancerProvider.register("steelyard_target_forms");
    writer = EtcdConnection.of(etcd.endpoints()).connect();
  }

  @AfterAll
  static void tearDown() {
    writer.close();
    recording.close();
  }

  @AfterEach
  void closeChannels() throws InterruptedException {
    for (ManagedChannel c : channels) {
      c.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  private static String member() {
    return etcd.endpoints().replace("http://", "");
  }

  /** A loopback port nobody listens on: an etcd member that is down. */
  private static String deadMember() {
    return "127.0.0.1:" + FreePorts.one();
  }

  private ManagedChannel channel(String target) {
    ManagedChannel c = Grpc.newChannelBuilder(target, InsecureChannelCredentials.create())
        .defaultLoadBalancingPolicy(recording.getPolicyName())
        .build();
    channels.add(c);
    c.getState(true); // starts the resolver; the recording policy never connects
    return c;
  }

  private static List<Integer> portsSeenBy(String service) {
    List<EquivalentAddressGroup> latest = recording.latest(service, 0);
    return latest == null ? null
        : latest.stream().map(e -> ((InetSocketAddress) e.getAddresses().get(0)).getPort()).toList();
  }

  @Test
  void queryFormNamesSeveralMembers() {
    put(writer, "/services/query-form/127.0.0.1:7001", "127.0.0.1:7001|2");
    // The first member named is down: the channel still resolves through the second.
    channel("etcd:///query-form?endpoints=" + deadMember() + "," + member());
    await().atMost(Duration.ofSeconds(15)).until(() -> List.of(7001).equals(portsSeenBy("query-form")));
  }

  @Test
  void authorityFormNamesOneMember() {
    put(writer, "/services/authority-form/127.0.0.1:7002", "127.0.0.1:7002|2");
    channel("etcd://" + member() + "/authority-form");
    await().atMost(Duration.ofSeconds(10)).until(() -> List.of(7002).equals(portsSeenBy("authority-form")));
  }

  @Test
  void noEndpointsInTheTargetUsesTheProvidersConnection() {
    // The META-INF/services provider reads STEELYARD_ETCD_ENDPOINTS, which this JVM does not set:
    // the target parses and the channel builds; what it lists is ServiceWatcherIT's business.
    assertThat(channel("etcd:///provider-form")).isNotNull();
  }

  /**
   * grpc-java 1.85 refuses a host list with ports in the authority before any provider sees it;
   * only its legacy RFC 2396 parsing ({@code GRPC_ENABLE_RFC3986_URIS=false}) lets it through.
   * The day grpc accepts it, this test fails and the docs can bring the form back.
   */
  @Test
  void hostListInTheAuthorityNeedsGrpcsLegacyUriParsing() {
    String target = "etcd://" + deadMember() + "," + member() + "/comma-form";
    assertThat(InternalFeatureFlags.getRfc3986UrisEnabled()).isTrue();
    assertThatThrownBy(() -> channel(target))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("Could not find a NameResolverProvider");

    put(writer, "/services/comma-form/127.0.0.1:7003", "127.0.0.1:7003|2");
    boolean before = InternalFeatureFlags.setRfc3986UrisEnabled(false);
    try {
      channel(target);
    } finally {
      InternalFeatureFlags.setRfc3986UrisEnabled(before);
    }
    await().atMost(Duration.ofSeconds(15)).until(() -> List.of(7003).equals(portsSeenBy("comma-form")));
  }
}
