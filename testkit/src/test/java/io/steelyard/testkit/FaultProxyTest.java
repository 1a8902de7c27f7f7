package io.steelyard.testkit;

import static java.nio.charset.StandardCharsets.US_ASCII;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The proxy against a loopback echo server: forwarding, holding, releasing, refusing. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class FaultProxyTest {

  private ServerSocket echo;
  private FaultProxy proxy;

  @BeforeEach
  void startEcho() throws IOException {
    echo = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread t = new Thread(this::serveEcho, "echo");
    t.setDaemon(true);
    t.start();
    proxy = FaultProxy.start("test", new InetSocketAddress(InetAddress.getLoopbackAddress(), echo.getLocalPort()));
  }

  @AfterEach
  void stop() throws IOException {
    proxy.close();
    echo.close();
  }

  @Test
  void forwardsBothWays() throws IOException {
    try (Socket s = connect()) {
      send(s, "hello");
      assertThat(read(s, 5)).isEqualTo("hello");
    }
    assertThat(proxy.acceptedConnections()).isEqualTo(1);
  }

  @Test
  void blackholedConnectionStaysOpenAndSilentThenDeliversWhatWasHeld() throws IOException {
    try (Socket s = connect()) {
      send(s, "a");
      assertThat(read(s, 1)).isEqualTo("a");

      proxy.blackhole();
      send(s, "bc");
      s.setSoTimeout(500);
      assertThatThrownBy(() -> s.getInputStream().read()).isInstanceOf(SocketTimeoutException.class);
      assertThat(proxy.openConnections()).isEqualTo(1);

      proxy.pass();
      s.setSoTimeout(5_000);
      assertThat(read(s, 2)).as("held bytes, delivered in order").isEqualTo("bc");
    }
  }

  @Test
  void connectionOpenedWhileBlackholedIsAcceptedButSilentUntilPass() throws IOException {
    proxy.blackhole();
    try (Socket s = connect()) {
      send(s, "x");
      s.setSoTimeout(500);
      assertThatThrownBy(() -> s.getInputStream().read()).isInstanceOf(SocketTimeoutException.class);

      proxy.pass();
      s.setSoTimeout(5_000);
      assertThat(read(s, 1)).isEqualTo("x");
    }
  }

  @Test
  void upstreamThatRefusesResetsTheClientConnection() throws IOException {
    // A socket bound but never listening holds its port, so nothing else on this busy machine can
    // take it (a closed ServerSocket's port can be reused at once) and every SYN to it is refused.
    try (Socket reserved = new Socket();
        FaultProxy refusing = reserveAndProxy(reserved)) {
      // The reset can come before connect() returns (the proxy accepts, dials, is refused and
      // resets at once), or at the first write or read: any of them is the refusal showing through.
      assertThatThrownBy(() -> {
            try (Socket s = new Socket()) {
              s.connect(refusing.address(), 2_000);
              s.setSoTimeout(5_000);
              send(s, "x");
              if (s.getInputStream().read() == -1) {
                throw new IOException("EOF");
              }
            }
          })
          .isInstanceOf(IOException.class);
    }
  }

  private static FaultProxy reserveAndProxy(Socket reserved) throws IOException {
    reserved.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
    return FaultProxy.start(
        "refusing", new InetSocketAddress(InetAddress.getLoopbackAddress(), reserved.getLocalPort()));
  }

  @Test
  void closeEndsOpenConnections() throws IOException {
    try (Socket s = connect()) {
      send(s, "a");
      assertThat(read(s, 1)).isEqualTo("a");
      proxy.close();
      s.setSoTimeout(5_000);
      Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> proxy.openConnections() == 0);
      assertThatThrownBy(() -> {
            if (s.getInputStream().read() == -1) {
              throw new IOException("EOF");
            }
          })
          .isInstanceOf(IOException.class);
    }
  }

  private Socket connect() throws IOException {
    Socket s = new Socket();
    s.connect(proxy.address(), 2_000);
    return s;
  }

  private static void send(Socket s, String text) throws IOException {
    s.getOutputStream().write(text.getBytes(US_ASCII));
    s.getOutputStream().flush();
  }

  private static String read(Socket s, int n) throws IOException {
    s.setSoTimeout(5_000);
    InputStream in = s.getInputStream();
    byte[] b = in.readNBytes(n);
    return new String(b, US_ASCII);
  }

  private void serveEcho() {
    while (!echo.isClosed()) {
      try {
        Socket c = echo.accept();
        Thread t =
            new Thread(
                () -> {
                  try (c) {
                    c.getInputStream().transferTo(c.getOutputStream());
                  } catch (IOException ignored) {
                    // the test closed it
                  }
                },
                "echo-conn");
        t.setDaemon(true);
        t.start();
      } catch (IOException e) {
        return;
      }
    }
  }
}
