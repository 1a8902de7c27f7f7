package io.steelyard.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.gson.JsonElement;
import com.google.gson.JsonParser;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.GetOption;
import io.grpc.EquivalentAddressGroup;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.steelyard.agent.RegistrationState;
import io.steelyard.agent.ServiceRegistration;
import io.steelyard.discovery.EtcdNameResolverProvider;
import io.steelyard.registry.DecodedValue;
import io.steelyard.registry.EndpointWeights;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.ValueCodec;
import io.steelyard.testkit.EtcdAuthAdmin;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.JwtKeys;
import io.steelyard.testkit.grpc.RecordingLoadBalancerProvider;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * etcd issuing JWT auth tokens ({@code --auth-token jwt,...,sign-method=RS256,ttl=5s}): a JWT
 * expires 5 s after login however busy its client is, so through 20 s of registrations and
 * weight changes every long-lived client (the agent, the resolver, the CLI's register sidecar)
 * has its token refused and logs in again without a failed call, a lost key or a view that
 * differs from etcd. The resolver's second channel, opened after the churn, lists and watches
 * through the client the first one opened 20 s before, with its long expired token.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class JwtTokensIT {

  private static final String SERVICE = "jwt";
  private static final String CLI_SERVICE = "jwt-cli";
  private static final Duration TOKEN_TTL = Duration.ofSeconds(5);
  private static final Duration CHURN = Duration.ofSeconds(20);
  private static final String SIDECAR_ADDRESS = "127.0.0.1:7300";

  @TempDir static Path dir;
  private static EtcdCluster etcd;
  private static Client root;

  @BeforeAll
  static void startEtcdWithJwtTokens() {
    etcd = EtcdCluster.builder().rootPassword("rootpw").jwtTokens(JwtKeys.generate(dir), TOKEN_TTL).build();
    etcd.start();
    etcd.authAdmin()
        .addRole("steelyard-server-jwt", EtcdAuthAdmin.Access.READWRITE, "/services/jwt/", "/services/.drained/jwt/")
        .addRole("steelyard-client", EtcdAuthAdmin.Access.READ, "/services/")
        .addRole("steelyard-operator", EtcdAuthAdmin.Access.READWRITE, "/services/")
        .addUser("server", "serverpw", "steelyard-server-jwt")
        .addUser("caller", "callerpw", "steelyard-client")
        .addUser("operator", "operatorpw", "steelyard-operator");
    root = connection("root:rootpw").connect();
  }

  @AfterAll
  static void stop() {
    if (root != null) {
      root.close();
    }
    etcd.close();
  }

  private static EtcdConnection connection(String user) {
    return EtcdConnection.builder().endpoints(etcd.endpoints()).userPassword(user).build();
  }

  @Test
  void registrationDiscoveryAndCliOutliveTheirTokens() throws Exception {
    Map<String, Integer> expected = new ConcurrentHashMap<>();
    List<ServiceRegistration> registrations = new CopyOnWriteArrayList<>();
    Map<String, Long> leases = new ConcurrentHashMap<>();
    List<Throwable> failures = new CopyOnWriteArrayList<>();
    AtomicInteger steps = new AtomicInteger();
    Random random = new Random(27);
    ScheduledExecutorService churn = Executors.newSingleThreadScheduledExecutor();
    Process sidecar = null;
    // One connection for both channels: they share its etcd client, and so its token.
    EtcdConnection caller = connection("caller:callerpw");
    try (RecordingLoadBalancerProvider recording = RecordingLoadBalancerProvider.register("steelyard_jwt_recording")) {
      ManagedChannel channel = channel(SERVICE, caller, recording);
      ManagedChannel late = null;
      try {
        sidecar = Cli.start(etcd.endpoints(), "--user", "operator:operatorpw",
            "register", CLI_SERVICE, SIDECAR_ADDRESS, "--weight", "3", "--ttl", "10s");

        // Every 200 ms one step: a new registration every tenth step (8 in all), else a weight
        // change of one of them; each step waits for etcd's answer, so the next one starts after.
        long end = System.nanoTime() + CHURN.toNanos();
        churn.scheduleWithFixedDelay(() -> {
          if (System.nanoTime() > end || !failures.isEmpty()) {
            return;
          }
          try {
            int step = steps.getAndIncrement();
            if (step % 10 == 0) {
              String address = "127.0.0.1:" + (7400 + registrations.size());
              ServiceRegistration r = ServiceRegistration.builder(connection("server:serverpw"), SERVICE, address)
                  .weight(1 + random.nextInt(100))
                  .ttl(Duration.ofSeconds(10))
                  .build();
              registrations.add(r);
              r.start().get(30, TimeUnit.SECONDS);
              leases.put(address, r.leaseId());
              expected.put(address, r.weight());
            } else {
              ServiceRegistration r = registrations.get(random.nextInt(registrations.size()));
              int weight = 1 + random.nextInt(100);
              r.setWeightAndWait(weight);
              expected.put(r.address(), weight);
            }
          } catch (Throwable t) {
            failures.add(t);
          }
        }, 0, 200, TimeUnit.MILLISECONDS);

        // The CLI while tokens expire under the agent: an operator's weight on the sidecar's key.
        await().atMost(Duration.ofSeconds(20)).until(() -> inEtcd(CLI_SERVICE).containsKey(SIDECAR_ADDRESS));
        Cli.Result set = Cli.run(etcd.endpoints(), "--user", "operator:operatorpw", "weight", "set", CLI_SERVICE, SIDECAR_ADDRESS, "7");
        assertThat(set.exitCode()).as("steelyard weight set: %s", set.stderr()).isZero();

        await().atMost(CHURN.plusSeconds(15)).until(() -> System.nanoTime() > end);
        churn.shutdown();
        assertThat(churn.awaitTermination(15, TimeUnit.SECONDS)).as("the last step ends").isTrue();
        assertThat(failures).as("failed registrations and weight changes").isEmpty();
        assertThat(steps.get()).as("steps taken in %s", CHURN).isGreaterThanOrEqualTo(40);
        assertThat(registrations).hasSize((steps.get() + 9) / 10);

        Map<String, Integer> want = Map.copyOf(expected);
        assertThat(inEtcd(SERVICE)).as("every acknowledged weight is in etcd").isEqualTo(want);
        await("the resolver's view equals etcd").atMost(Duration.ofSeconds(10))
            .untilAsserted(() -> assertThat(resolved(recording, SERVICE)).isEqualTo(want));
        late = channel(CLI_SERVICE, caller, recording);
        await("a channel opened on the old client sees the sidecar").atMost(Duration.ofSeconds(10))
            .untilAsserted(() -> assertThat(resolved(recording, CLI_SERVICE)).isEqualTo(Map.of(SIDECAR_ADDRESS, 7)));
        Cli.Result list = Cli.run(etcd.endpoints(), "--user", "operator:operatorpw", "list", SERVICE, "--output", "json");
        assertThat(list.exitCode()).as("steelyard list: %s", list.stderr()).isZero();
        assertThat(listed(list.stdout())).as("steelyard list").isEqualTo(want);
        assertThat(inEtcd(CLI_SERVICE)).as("the sidecar's key").isEqualTo(Map.of(SIDECAR_ADDRESS, 7));
        for (ServiceRegistration r : registrations) {
          assertThat(r.state()).as("%s", r).isEqualTo(RegistrationState.REGISTERED);
          assertThat(r.leaseId()).as("%s kept its first lease", r).isEqualTo(leases.get(r.address()));
        }
        assertThat(sidecar.isAlive()).as("the register sidecar runs on").isTrue();
        assertThat(etcd.logsContain("Token is expired")).as("etcd refused an expired JWT").isTrue();
      } finally {
        channel.shutdownNow();
        if (late != null) {
          late.shutdownNow();
        }
      }
    } finally {
      churn.shutdownNow();
      registrations.forEach(ServiceRegistration::close);
      if (sidecar != null) {
        sidecar.destroy();
        sidecar.waitFor(30, TimeUnit.SECONDS);
      }
    }
  }

  private static ManagedChannel channel(String service, EtcdConnection etcd, RecordingLoadBalancerProvider recording) {
    ManagedChannel channel = Grpc.newChannelBuilder("etcd:///" + service, InsecureChannelCredentials.create())
        .setNameResolverArg(EtcdNameResolverProvider.CONNECTION, etcd)
        .defaultLoadBalancingPolicy(recording.getPolicyName())
        // the recording policy, not the resolver's weighted_random, while no config is stored
        .setNameResolverArg(EtcdNameResolverProvider.FALLBACK_SERVICE_CONFIG, Map.of())
        .build();
    channel.getState(true); // starts the resolver; the recording policy never connects
    return channel;
  }

  /** Address to weight of every instance under the service's prefix, read by root. */
  private static Map<String, Integer> inEtcd(String service) throws Exception {
    ByteSequence prefix = ByteSequence.from("/services/" + service + "/", StandardCharsets.UTF_8);
    Map<String, Integer> out = new HashMap<>();
    root.getKVClient().get(prefix, GetOption.builder().isPrefix(true).build()).get(10, TimeUnit.SECONDS).getKvs()
        .forEach(kv -> {
          DecodedValue.Accepted a = (DecodedValue.Accepted) ValueCodec.decode(kv.getValue().getBytes());
          out.put(a.address(), a.weight());
        });
    return out;
  }

  private static Map<String, Integer> resolved(RecordingLoadBalancerProvider recording, String service) {
    List<EquivalentAddressGroup> latest = recording.latest(service, 0);
    if (latest == null) {
      return Map.of();
    }
    return latest.stream().collect(Collectors.toMap(
        e -> {
          InetSocketAddress a = (InetSocketAddress) e.getAddresses().get(0);
          return a.getHostString() + ":" + a.getPort();
        },
        EndpointWeights::weight));
  }

  private static Map<String, Integer> listed(String json) {
    Map<String, Integer> out = new HashMap<>();
    List<JsonElement> instances = new ArrayList<>();
    JsonParser.parseString(json).getAsJsonObject().getAsJsonArray("instances").forEach(instances::add);
    instances.forEach(i -> out.put(
        i.getAsJsonObject().get("address").getAsString(), i.getAsJsonObject().get("weight").getAsInt()));
    return out;
  }
}
