package io.steelyard.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.etcd.jetcd.Client;
import io.steelyard.testkit.EtcdCluster;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Bad service names, addresses and weights are refused with exit 2 by every command, and etcd is
 * not touched: the whole keyspace, and its revision, are the same afterwards.
 */
@Timeout(60)
class InvalidInputIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  private static Client client;
  private static Keyspace keys;
  private static Cli cli;

  @BeforeAll
  static void writeKeysABadNameMightReach() {
    client = Client.builder().endpoints(etcd.endpoints()).build();
    keys = new Keyspace(client);
    cli = Cli.withEndpoints(etcd.endpoints());
    // Something a name like "../x" might reach if it were not refused.
    keys.put("/services/greeter/10.0.0.7:50051", "10.0.0.7:50051|5", keys.grant(120));
    keys.put("/x/10.0.0.7:50051", "10.0.0.7:50051|5");
    keys.put("/services/a/b/10.0.0.7:50051", "10.0.0.7:50051|5");
  }

  @AfterAll
  static void disconnect() {
    client.close();
  }

  static Stream<Arguments> badServiceNames() {
    List<Arguments> out = new ArrayList<>();
    for (String name : new String[] {"../x", "a/b", "", "with space", ".", "..", "name!", "tab\tx"}) {
      for (String[] command : commandsWith(name, "10.0.0.7:50051")) {
        out.add(Arguments.of(name, command));
      }
    }
    return out.stream();
  }

  static Stream<Arguments> badAddresses() {
    List<Arguments> out = new ArrayList<>();
    for (String address :
        new String[] {"10.0.0.7", "10.0.0.7:0", "10.0.0.7:65536", ":50051", "::1:50051", "a b:1",
          "../x:1", "host/x:1", ""}) {
      for (String[] command : commandsWith("greeter", address)) {
        if (!command[0].equals("list") && !command[0].equals("watch")) {
          out.add(Arguments.of(address, command));
        }
      }
    }
    return out.stream();
  }

  static Stream<Arguments> badWeights() {
    return Stream.of(
        Arguments.of("-1", new String[] {"weight", "set", "greeter", "10.0.0.7:50051", "-1"}),
        Arguments.of("1000001", new String[] {"weight", "set", "greeter", "10.0.0.7:50051", "1000001"}),
        Arguments.of("x", new String[] {"weight", "set", "greeter", "10.0.0.7:50051", "x"}),
        Arguments.of("2.5", new String[] {"weight", "set", "greeter", "10.0.0.7:50051", "2.5"}),
        Arguments.of("-1", new String[] {"undrain", "greeter", "10.0.0.7:50051", "--weight", "-1"}),
        Arguments.of("1000001", new String[] {"register", "greeter", "10.0.0.7:50051", "--weight", "1000001"}));
  }

  private static List<String[]> commandsWith(String service, String address) {
    return List.of(
        new String[] {"list", service},
        new String[] {"watch", service, "--count", "1"},
        new String[] {"weight", "get", service, address},
        new String[] {"weight", "set", service, address, "3"},
        new String[] {"drain", service, address},
        new String[] {"undrain", service, address},
        new String[] {"deregister", service, address},
        new String[] {"register", service, address});
  }

  @ParameterizedTest(name = "service {0}: {1}")
  @MethodSource("badServiceNames")
  void badServiceNameIsRefusedWithExitTwoAndTouchesNothing(String name, String[] command) {
    assertRefused(command, "steelyard: service: ");
  }

  @ParameterizedTest(name = "address {0}: {1}")
  @MethodSource("badAddresses")
  void badAddressIsRefusedWithExitTwoAndTouchesNothing(String address, String[] command) {
    assertRefused(command, "steelyard: address: ");
  }

  @ParameterizedTest(name = "weight {0}: {1}")
  @MethodSource("badWeights")
  void badWeightIsRefusedWithExitTwoAndTouchesNothing(String weight, String[] command) {
    assertRefused(command, "steelyard: ");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badLocalities")
  void badZoneOrRegionIsRefusedWithExitTwoAndTouchesNothing(String error, String[] command) {
    assertRefused(command, "steelyard: " + error);
  }

  static Stream<Arguments> badLocalities() {
    String[] register = {"register", "greeter", "10.0.0.7:50051"};
    return Stream.of(
        Arguments.of("zone: 'eu 1'", concat(register, "--zone", "eu 1")),
        Arguments.of("region: ''", concat(register, "--region", "")),
        Arguments.of("zone: given with --zone and --meta zone=",
            concat(register, "--zone", "a", "--meta", "zone=b")),
        Arguments.of("meta: the pipe format cannot carry metadata",
            concat(register, "--zone", "a", "--format", "pipe")));
  }

  private static String[] concat(String[] head, String... tail) {
    String[] all = java.util.Arrays.copyOf(head, head.length + tail.length);
    System.arraycopy(tail, 0, all, head.length, tail.length);
    return all;
  }

  private static void assertRefused(String[] command, String errorStart) {
    Keyspace.Snapshot before = keys.snapshot();

    Cli.Result r = cli.run(command);

    assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
    assertThat(r.out()).isEmpty();
    assertThat(r.err()).startsWith(errorStart);
    assertThat(r.err().lines().toList()).hasSize(2).last().asString().startsWith("Run 'steelyard ");
    assertThat(keys.snapshot()).isEqualTo(before);
  }
}
