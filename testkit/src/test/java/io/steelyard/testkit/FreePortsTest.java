package io.steelyard.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class FreePortsTest {

  @Test
  void portsAreBelowTheEphemeralRangeAndBindable() throws IOException {
    List<Integer> ports = FreePorts.distinct(20);

    assertThat(ports).hasSize(20).doesNotHaveDuplicates();
    assertThat(ports).allSatisfy(port -> assertThat(port).isBetween(FreePorts.FIRST, FreePorts.LAST));
    for (int port : ports) {
      try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
        assertThat(s.getLocalPort()).isEqualTo(port);
      }
    }
  }

  @Test
  void aPortIsNeverHandedOutTwice() {
    Set<Integer> seen = new HashSet<>();
    for (int i = 0; i < 500; i++) {
      assertThat(seen.add(FreePorts.one())).as("a repeated port").isTrue();
    }
  }

  @Test
  void aPortSomethingListensOnIsNotHandedOut() throws IOException {
    List<ServerSocket> squatters = new java.util.ArrayList<>();
    try {
      // Every port of a narrow slice is taken; what FreePorts hands out is never one of them.
      Set<Integer> taken = new HashSet<>();
      for (int port = FreePorts.FIRST; port < FreePorts.FIRST + 200; port++) {
        try {
          squatters.add(new ServerSocket(port, 1, InetAddress.getLoopbackAddress()));
          taken.add(port);
        } catch (IOException alreadyInUse) {
          taken.add(port);
        }
      }
      for (int i = 0; i < 200; i++) {
        assertThat(taken).doesNotContain(FreePorts.one());
      }
    } finally {
      for (ServerSocket s : squatters) {
        s.close();
      }
    }
  }
}
