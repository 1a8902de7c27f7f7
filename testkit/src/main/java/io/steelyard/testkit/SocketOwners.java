package io.steelyard.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.OptionalLong;

/**
 * Which process dialed a loopback TCP connection, from Linux's {@code /proc}: the dialer's socket
 * is the one whose local port is the connection's source port and whose remote port is ours; its
 * inode appears among the dialer's file descriptors as {@code socket:[inode]}.
 *
 * <p>Why: etcd members dial each other's peer URLs from ephemeral ports on the same loopback
 * address, and not every peer request says who sent it (raft messages carry {@code
 * X-Server-From}, but lease renewals forwarded to the leader carry nothing), so a proxy cannot
 * tell from the bytes whether a connection comes from the member it must cut off.
 */
final class SocketOwners {

  private static final List<Path> TABLES = List.of(Path.of("/proc/net/tcp"), Path.of("/proc/net/tcp6"));

  private SocketOwners() {}

  /** Whether this platform exposes what {@link #dialer} needs. */
  static boolean supported() {
    return Files.isReadable(TABLES.get(0)) && Files.isDirectory(Path.of("/proc/self/fd"));
  }

  /**
   * The PID among {@code candidates} that owns the client end of the connection from {@code
   * sourcePort} to {@code destinationPort}, or empty if none does (or {@code /proc} says nothing).
   */
  static OptionalLong dialer(int sourcePort, int destinationPort, Collection<Long> candidates) {
    long inode = inodeOf(sourcePort, destinationPort);
    if (inode == 0) {
      return OptionalLong.empty();
    }
    String link = "socket:[" + inode + "]";
    for (long pid : candidates) {
      if (ownsSocket(pid, link)) {
        return OptionalLong.of(pid);
      }
    }
    return OptionalLong.empty();
  }

  private static long inodeOf(int localPort, int remotePort) {
    for (Path table : TABLES) {
      List<String> lines;
      try {
        lines = Files.readAllLines(table, StandardCharsets.US_ASCII);
      } catch (IOException | UncheckedIOException e) {
        continue;
      }
      // "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode"
      for (int i = 1; i < lines.size(); i++) {
        String[] f = lines.get(i).trim().split("\\s+");
        if (f.length > 9 && port(f[1]) == localPort && port(f[2]) == remotePort) {
          long inode = Long.parseLong(f[9]);
          if (inode != 0) {
            return inode;
          }
        }
      }
    }
    return 0;
  }

  private static int port(String hexAddress) {
    int colon = hexAddress.lastIndexOf(':');
    return colon < 0 ? -1 : Integer.parseInt(hexAddress.substring(colon + 1), 16);
  }

  private static boolean ownsSocket(long pid, String link) {
    try (DirectoryStream<Path> fds = Files.newDirectoryStream(Path.of("/proc", Long.toString(pid), "fd"))) {
      for (Path fd : fds) {
        try {
          if (link.equals(Files.readSymbolicLink(fd).toString())) {
            return true;
          }
        } catch (IOException | UnsupportedOperationException e) {
          // the descriptor closed while we looked: not the one we want
        }
      }
    } catch (IOException e) {
      return false; // the process is gone, or not ours to inspect
    }
    return false;
  }
}
