package io.steelyard.testkit;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Loopback ports for a process that binds them later, or binds them again after a restart.
 *
 * <p>A port the kernel hands out for a bind to port 0 comes from its ephemeral range (on Linux
 * 32768-60999 by default), the range it also takes the local ports of outgoing connections
 * from. Released so that a server can bind it, or released by a server that restarts, such a
 * port can meanwhile become the local end of any connection on the machine, and the bind fails
 * with "Address already in use". Below that range only an explicit bind takes a port, so these
 * ports are drawn at random from 20000-31999, each probed free on loopback, and never handed out
 * twice by one JVM.
 */
public final class FreePorts {

  static final int FIRST = 20_000;
  static final int LAST = 31_999;
  private static final int ATTEMPTS_PER_PORT = 200;
  private static final Set<Integer> HANDED_OUT = ConcurrentHashMap.newKeySet();

  private FreePorts() {}

  /** One port nothing listens on right now, below the ephemeral range. */
  public static int one() {
    return distinct(1).get(0);
  }

  /** {@code count} different ports, each free when probed (all probes are held together). */
  public static List<Integer> distinct(int count) {
    List<ServerSocket> probes = new ArrayList<>();
    List<Integer> ports = new ArrayList<>();
    try {
      while (ports.size() < count) {
        ServerSocket probe = probe();
        probes.add(probe);
        ports.add(probe.getLocalPort());
      }
      return List.copyOf(ports);
    } finally {
      for (ServerSocket probe : probes) {
        try {
          probe.close();
        } catch (IOException ignored) {
          // the port is freed when the JVM exits at the latest
        }
      }
    }
  }

  private static ServerSocket probe() {
    InetAddress loopback = InetAddress.getLoopbackAddress();
    for (int attempt = 0; attempt < ATTEMPTS_PER_PORT; attempt++) {
      int port = ThreadLocalRandom.current().nextInt(FIRST, LAST + 1);
      if (!HANDED_OUT.add(port)) {
        continue;
      }
      try {
        return new ServerSocket(port, 1, loopback);
      } catch (IOException taken) {
        // in use by something else: draw again
      }
    }
    throw new IllegalStateException(
        "no free loopback port in " + FIRST + "-" + LAST + " after " + ATTEMPTS_PER_PORT + " draws");
  }
}
