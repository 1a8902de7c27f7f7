package io.steelyard.spring;

import com.google.common.net.InetAddresses;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which host to register for a server that listens on {@code bound}: the bound address itself
 * when the server is bound to one, else (a wildcard bind) this machine's first site-local IPv4
 * address, else its first other non-loopback IPv4 address, else the loopback address. The choice
 * is logged once at registration; {@code steelyard.registration.host} or {@code address}
 * overrides it.
 */
final class HostDetector {

  private static final Logger logger = LoggerFactory.getLogger(HostDetector.class);

  private HostDetector() {}

  /** The host to register, as text fit for {@code host:port} (IPv6 in brackets). */
  static String host(InetAddress bound) {
    return host(bound, HostDetector::interfaceAddresses);
  }

  /** {@link #host(InetAddress)} with the machine's addresses from {@code candidates}. */
  static String host(InetAddress bound, CandidateSource candidates) {
    if (!bound.isAnyLocalAddress()) {
      return InetAddresses.toUriString(bound);
    }
    List<InetAddress> all = candidates.addresses();
    InetAddress chosen = all.stream()
        .filter(a -> a instanceof Inet4Address && a.isSiteLocalAddress())
        .findFirst()
        .or(() -> all.stream()
            .filter(a -> a instanceof Inet4Address && !a.isLoopbackAddress() && !a.isLinkLocalAddress())
            .findFirst())
        .orElse(InetAddress.getLoopbackAddress());
    return InetAddresses.toUriString(chosen);
  }

  /** {@code host:port}, with an IPv6 literal host in brackets. */
  static String withPort(String host, int port) {
    boolean ipv6Literal = host.indexOf(':') >= 0 && !host.startsWith("[");
    return (ipv6Literal ? "[" + host + "]" : host) + ":" + port;
  }

  /** The machine's addresses to choose from; a seam for tests. */
  @FunctionalInterface
  interface CandidateSource {
    List<InetAddress> addresses();
  }

  private static List<InetAddress> interfaceAddresses() {
    List<InetAddress> out = new ArrayList<>();
    try {
      for (NetworkInterface nic : Collections.list(NetworkInterface.getNetworkInterfaces())) {
        if (nic.isUp() && !nic.isLoopback() && !nic.isVirtual()) {
          out.addAll(Collections.list(nic.getInetAddresses()));
        }
      }
    } catch (SocketException e) {
      logger.warn("Cannot list network interfaces; registering the loopback address", e);
    }
    return out;
  }
}
