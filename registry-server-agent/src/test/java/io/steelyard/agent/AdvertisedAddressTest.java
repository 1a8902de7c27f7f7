package io.steelyard.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.common.net.InetAddresses;
import io.grpc.Server;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.netty.NettyServerBuilder;
import java.io.IOException;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The one rule for the address a server registers, over a given environment and interfaces. */
class AdvertisedAddressTest {

  private static InetAddress ip(String s) {
    return InetAddresses.forString(s);
  }

  private static final List<InetAddress> MACHINE =
      List.of(ip("fe80::1"), ip("169.254.0.9"), ip("fd00::7"), ip("203.0.113.5"), ip("10.1.2.3"), ip("192.168.0.4"));

  private static AdvertisedAddress rule(Map<String, String> env, List<InetAddress> interfaces) {
    return AdvertisedAddress.of(env::get, () -> interfaces);
  }

  @Test
  void theHostVariableComesFirst() {
    AdvertisedAddress rule = rule(Map.of("STEELYARD_ADVERTISE_HOST", "10.9.8.7"), MACHINE);

    assertThat(rule.of(50051)).isEqualTo("10.9.8.7:50051");
    assertThat(rule.of(new InetSocketAddress(ip("127.0.0.1"), 50051))).isEqualTo("10.9.8.7:50051");
  }

  @Test
  void theHostVariableIsReadFromTheGivenEnvironment() {
    Map<String, String> properties = Map.of("STEELYARD_ADVERTISE_HOST", "10.9.8.7", "POD_IP", "10.6.5.4");

    assertThat(AdvertisedAddress.from(properties::get).of(50051)).isEqualTo("10.9.8.7:50051");
    assertThat(AdvertisedAddress.from(properties::get).withHostVariable("POD_IP").of(50051))
        .isEqualTo("10.6.5.4:50051");
  }

  @Test
  void theHostVariableMayBeRenamedAndHoldANameOrAnIpv6Literal() {
    Map<String, String> env = Map.of("POD_IP", "fd00::42", "NODE_NAME", "node-1.example");

    assertThat(rule(env, MACHINE).withHostVariable("POD_IP").of(8080)).isEqualTo("[fd00::42]:8080");
    assertThat(rule(Map.of("POD_IP", "[fd00::42]"), MACHINE).withHostVariable("POD_IP").of(8080))
        .isEqualTo("[fd00::42]:8080");
    assertThat(rule(env, MACHINE).withHostVariable("NODE_NAME").of(8080)).isEqualTo("node-1.example:8080");
    assertThat(rule(env, MACHINE).of(8080)).as("the default variable is unset").isEqualTo("10.1.2.3:8080");
  }

  @Test
  void anIpLiteralFromTheVariableOrTheHostIsCanonical() {
    Map<String, String> env = Map.of("POD_IP", "FD00:0:0:0:0:0:0:42", "BRACKETED", "[FD00::0042]");

    assertThat(rule(env, MACHINE).withHostVariable("POD_IP").of(8080)).isEqualTo("[fd00::42]:8080");
    assertThat(rule(env, MACHINE).withHostVariable("BRACKETED").of(8080)).isEqualTo("[fd00::42]:8080");
    assertThat(AdvertisedAddress.hostAndPort("FD00:0::7", 50051)).isEqualTo("[fd00::7]:50051");
    assertThat(AdvertisedAddress.hostAndPort("[fd00::7]", 50051)).isEqualTo("[fd00::7]:50051");
    assertThat(AdvertisedAddress.hostAndPort("10.0.0.1", 50051)).isEqualTo("10.0.0.1:50051");
    assertThat(AdvertisedAddress.hostAndPort("Node-1.example", 50051)).isEqualTo("Node-1.example:50051");
  }

  @Test
  void aBlankHostVariableIsUnset() {
    assertThat(rule(Map.of("STEELYARD_ADVERTISE_HOST", "  "), MACHINE).of(8080)).isEqualTo("10.1.2.3:8080");
  }

  @Test
  void aHostVariableThatIsNoHostIsRefusedNamingIt() {
    assertThatThrownBy(() -> rule(Map.of("POD_IP", "10.0.0.1:8080"), MACHINE).withHostVariable("POD_IP").of(8080))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("$POD_IP: '10.0.0.1:8080' (expected: an IP address or a host name, no port)");
    assertThatThrownBy(() -> rule(Map.of(), MACHINE).withHostVariable("A=B"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("hostVariable: 'A=B'");
  }

  @Test
  void aServerBoundToOneAddressRegistersThatAddress() {
    AdvertisedAddress rule = rule(Map.of(), MACHINE);

    assertThat(rule.of(new InetSocketAddress(ip("192.168.0.4"), 9090))).isEqualTo("192.168.0.4:9090");
    assertThat(rule.of(new InetSocketAddress(ip("fd00::7"), 9090))).isEqualTo("[fd00::7]:9090");
  }

  @Test
  void aWildcardBindRegistersTheFirstSiteLocalIpv4Address() {
    AdvertisedAddress rule = rule(Map.of(), MACHINE);

    assertThat(rule.of(new InetSocketAddress(ip("0.0.0.0"), 9090))).isEqualTo("10.1.2.3:9090");
    assertThat(rule.of(new InetSocketAddress(ip("::"), 9090))).isEqualTo("10.1.2.3:9090");
    assertThat(rule.of(9090)).isEqualTo("10.1.2.3:9090");
  }

  @Test
  void anIpv6OnlyMachineRegistersItsUniqueLocalAddressInBrackets() {
    AdvertisedAddress rule = rule(Map.of(), List.of(ip("fe80::1"), ip("2001:db8::9"), ip("fd12:3456::1")));

    assertThat(rule.of(50051)).isEqualTo("[fd12:3456::1]:50051");
  }

  @Test
  void withoutASiteLocalAddressAnyOtherRoutableOneIsTakenIpv4First() {
    assertThat(rule(Map.of(), List.of(ip("169.254.0.9"), ip("2001:db8::9"), ip("203.0.113.5"))).of(80))
        .isEqualTo("203.0.113.5:80");
    assertThat(rule(Map.of(), List.of(ip("fe80::1"), ip("2001:db8::9"))).of(80)).isEqualTo("[2001:db8::9]:80");
  }

  @Test
  void aMachineWithOnlyLoopbackRegistersTheLoopbackAddress() {
    assertThat(rule(Map.of(), List.of()).of(50051)).isEqualTo("127.0.0.1:50051");
    assertThat(rule(Map.of(), List.of(ip("fe80::1"), ip("169.254.0.9"))).of(50051)).isEqualTo("127.0.0.1:50051");
  }

  @Test
  void aStartedServerGivesItsBoundPort() throws IOException {
    Server server = NettyServerBuilder.forAddress(new InetSocketAddress(ip("0.0.0.0"), 0)).build().start();
    try {
      int port = ((InetSocketAddress) server.getListenSockets().get(0)).getPort();

      assertThat(rule(Map.of(), MACHINE).of(server)).isEqualTo("10.1.2.3:" + port);
      assertThat(rule(Map.of("STEELYARD_ADVERTISE_HOST", "10.9.8.7"), MACHINE).of(server))
          .isEqualTo("10.9.8.7:" + port);
    } finally {
      server.shutdownNow();
    }
  }

  @Test
  void aServerWithoutATcpPortIsRefused() throws IOException {
    Server notStarted = NettyServerBuilder.forPort(0).build();
    Server inProcess = InProcessServerBuilder.forName("advertised-address-test").build().start();
    try {
      assertThatThrownBy(() -> rule(Map.of(), MACHINE).of(notStarted))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("expected: a started server listening on a TCP port");
      assertThatThrownBy(() -> rule(Map.of(), MACHINE).of(inProcess))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("expected: a started server listening on a TCP port");
    } finally {
      inProcess.shutdownNow();
    }
  }

  @Test
  void aPortOutOfRangeIsRefused() {
    assertThatThrownBy(() -> rule(Map.of(), MACHINE).of(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("port: 0 (expected: 1..65535)");
  }

  @Test
  void hostAndPortPutsIpv6HostsInBracketsAndChecksTheHost() {
    assertThat(AdvertisedAddress.hostAndPort("::1", 9090)).isEqualTo("[::1]:9090");
    assertThat(AdvertisedAddress.hostAndPort("[::1]", 9090)).isEqualTo("[::1]:9090");
    assertThat(AdvertisedAddress.hostAndPort("node-1.example", 9090)).isEqualTo("node-1.example:9090");
    assertThatThrownBy(() -> AdvertisedAddress.hostAndPort("node-1.example:80", 9090))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("host: 'node-1.example:80' (expected: an IP address or a host name, no port)");
  }

  @Test
  void anIpv6ScopeIsLeftOutForItNamesAnInterfaceOfThisMachine() throws Exception {
    InetAddress scoped = Inet6Address.getByAddress(null, ip("fd00::2").getAddress(), 2);
    assertThat(scoped.getHostAddress()).contains("%");

    assertThat(rule(Map.of(), List.of(scoped)).of(50051)).isEqualTo("[fd00::2]:50051");
    assertThat(rule(Map.of(), List.of()).of(new InetSocketAddress(scoped, 50051))).isEqualTo("[fd00::2]:50051");
  }
}
