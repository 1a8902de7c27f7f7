package io.steelyard.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;

/**
 * A loopback TCP forwarder that a test can cut and restore, to take one client away from etcd
 * while others still reach it.
 */
final class TcpProxy implements AutoCloseable {

  private final int targetPort;
  private final int port;
  private final List<Socket> sockets = new ArrayList<>();
  private ServerSocket server;

  TcpProxy(int targetPort) throws IOException {
    this.targetPort = targetPort;
    ServerSocket s = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    this.port = s.getLocalPort();
    listen(s);
  }

  String endpoint() {
    return "http://127.0.0.1:" + port;
  }

  /** Closes every connection and refuses new ones. */
  synchronized void cut() throws IOException {
    server.close();
    for (Socket s : sockets) {
      s.close();
    }
    sockets.clear();
  }

  /** Accepts connections again, on the same port. */
  synchronized void restore() throws IOException {
    ServerSocket s = new ServerSocket();
    s.setReuseAddress(true);
    s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
    listen(s);
  }

  @Override
  public void close() throws IOException {
    cut();
  }

  private synchronized void listen(ServerSocket s) {
    server = s;
    Thread acceptor =
        new Thread(
            () -> {
              while (true) {
                try {
                  Socket in = s.accept();
                  Socket out = new Socket(InetAddress.getLoopbackAddress(), targetPort);
                  synchronized (this) {
                    if (s.isClosed()) {
                      in.close();
                      out.close();
                      return;
                    }
                    sockets.add(in);
                    sockets.add(out);
                  }
                  pump(in, out);
                  pump(out, in);
                } catch (IOException closed) {
                  return;
                }
              }
            },
            "proxy-accept-" + port);
    acceptor.setDaemon(true);
    acceptor.start();
  }

  private static void pump(Socket from, Socket to) {
    Thread t =
        new Thread(
            () -> {
              byte[] buf = new byte[16 * 1024];
              try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int n;
                while ((n = in.read(buf)) >= 0) {
                  out.write(buf, 0, n);
                  out.flush();
                }
              } catch (IOException closed) {
                // either side closed
              } finally {
                try {
                  from.close();
                  to.close();
                } catch (IOException ignored) {
                  // closing
                }
              }
            },
            "proxy-pump");
    t.setDaemon(true);
    t.start();
  }
}
