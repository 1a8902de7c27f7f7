package io.steelyard.xds;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.handler.ssl.NotSslRecordException;
import java.net.InetSocketAddress;
import javax.net.ssl.SSLHandshakeException;
import org.junit.jupiter.api.Test;

class HandshakeRefusalsTest {

  private final XdsMetrics metrics = new XdsMetrics(new SimpleMeterRegistry(), null);
  private final HandshakeRefusals refusals = new HandshakeRefusals(metrics);

  @Test
  void aRefusalIsLoggedOncePerPeerAddressAndReasonAndCountedEachTime() {
    SSLHandshakeException noCertificate = new SSLHandshakeException("Empty client certificate chain");
    try (Logs logs = Logs.of(HandshakeRefusals.class)) {
      refusals.refused(new InetSocketAddress("10.0.4.7", 40001), noCertificate);
      refusals.refused(new InetSocketAddress("10.0.4.7", 40002), noCertificate);
      refusals.refused(new InetSocketAddress("10.0.4.7", 40003), new NotSslRecordException("not an SSL/TLS record"));
      refusals.refused(new InetSocketAddress("10.0.4.8", 40001), noCertificate);
      refusals.refused(new InetSocketAddress("10.0.4.8", 40004), noCertificate);

      assertThat(logs.lines()).containsExactly(
          "WARN Refused a TLS handshake from 10.0.4.7: no client certificate (the client CA requires one)",
          "WARN Refused a TLS handshake from 10.0.4.7: not TLS (a plaintext client on the TLS port?)",
          "WARN Refused a TLS handshake from 10.0.4.8: no client certificate (the client CA requires one)");
    }
    assertThat(metrics.refusals("handshake")).isEqualTo(5);
  }

  @Test
  void aCertificateFromAnotherCaIsNamedWithTheEnginesWords() {
    assertThat(HandshakeRefusals.reason(new SSLHandshakeException(
            "PKIX path building failed: unable to find valid certification path to requested target")))
        .startsWith("a client certificate the client CA did not sign (PKIX path building failed");
  }
}
