package io.steelyard.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.common.net.InetAddresses;
import java.net.InetAddress;
import java.util.List;
import org.junit.jupiter.api.Test;

class HostDetectorTest {

  private static InetAddress ip(String s) {
    return InetAddresses.forString(s);
  }

  private static final HostDetector.CandidateSource MACHINE = () -> List.of(
      ip("fe80::1"), ip("169.254.0.9"), ip("203.0.113.5"), ip("10.1.2.3"), ip("192.168.0.4"));

  @Test
  void aServerBoundToOneAddressRegistersThatAddress() {
    assertThat(HostDetector.host(ip("127.0.0.1"), MACHINE)).isEqualTo("127.0.0.1");
    assertThat(HostDetector.host(ip("::1"), MACHINE)).isEqualTo("[::1]");
  }

  @Test
  void aWildcardBindRegistersTheFirstSiteLocalIpv4Address() {
    assertThat(HostDetector.host(ip("0.0.0.0"), MACHINE)).isEqualTo("10.1.2.3");
    assertThat(HostDetector.host(ip("::"), MACHINE)).isEqualTo("10.1.2.3");
  }

  @Test
  void withoutASiteLocalAddressAnyOtherRoutableIpv4OneIsTakenElseLoopback() {
    assertThat(HostDetector.host(ip("0.0.0.0"), () -> List.of(ip("169.254.0.9"), ip("203.0.113.5"))))
        .isEqualTo("203.0.113.5");
    assertThat(HostDetector.host(ip("0.0.0.0"), () -> List.of(ip("fe80::1")))).isEqualTo("127.0.0.1");
  }

  @Test
  void ipv6HostsGetBracketsWithAPort() {
    assertThat(HostDetector.withPort("::1", 9090)).isEqualTo("[::1]:9090");
    assertThat(HostDetector.withPort("[::1]", 9090)).isEqualTo("[::1]:9090");
    assertThat(HostDetector.withPort("node-1.example", 9090)).isEqualTo("node-1.example:9090");
  }
}
