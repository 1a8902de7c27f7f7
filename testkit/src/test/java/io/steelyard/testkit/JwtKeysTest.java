package io.steelyard.testkit;

import static java.nio.charset.StandardCharsets.US_ASCII;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.Signature;
import java.security.spec.PKCS8EncodedKeySpec;
import java.security.spec.X509EncodedKeySpec;
import java.time.Duration;
import java.util.Base64;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class JwtKeysTest {

  @TempDir Path dir;

  @Test
  void theFilesHoldOneRsaPairInPem() throws Exception {
    JwtKeys keys = JwtKeys.generate(dir);
    KeyFactory rsa = KeyFactory.getInstance("RSA");
    PrivateKey priv = rsa.generatePrivate(new PKCS8EncodedKeySpec(der(keys.privateKey(), "PRIVATE KEY")));
    PublicKey pub = rsa.generatePublic(new X509EncodedKeySpec(der(keys.publicKey(), "PUBLIC KEY")));

    Signature signer = Signature.getInstance("SHA256withRSA"); // RS256
    signer.initSign(priv);
    signer.update(new byte[] {1, 2, 3});
    byte[] signature = signer.sign();
    Signature verifier = Signature.getInstance("SHA256withRSA");
    verifier.initVerify(pub);
    verifier.update(new byte[] {1, 2, 3});
    assertThat(verifier.verify(signature)).isTrue();
  }

  @Test
  void theFlagNamesBothFilesTheMethodAndTheTtl() {
    JwtKeys keys = JwtKeys.generate(dir);

    assertThat(keys.authTokenFlag(Duration.ofSeconds(5))).isEqualTo(
        "jwt,pub-key=" + keys.publicKey() + ",priv-key=" + keys.privateKey() + ",sign-method=RS256,ttl=5s");
    assertThatThrownBy(() -> keys.authTokenFlag(Duration.ofMillis(500)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("ttl: PT0.5S (expected: >= 1s)");
  }

  @Test
  void aClusterWithJwtTokensRefusesTheDockerBackend() {
    JwtKeys keys = JwtKeys.generate(dir);

    assertThatThrownBy(() -> EtcdCluster.builder()
            .backend(EtcdCluster.Backend.DOCKER).jwtTokens(keys, Duration.ofSeconds(5)).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageStartingWith("backend: DOCKER with jwtTokens (expected: BINARY or AUTO");
    EtcdCluster.builder().jwtTokens(keys, Duration.ofSeconds(5)).backend(EtcdCluster.Backend.BINARY).build();
    EtcdCluster.builder().jwtTokens(keys, Duration.ofSeconds(5)).build();
  }

  private static byte[] der(Path pem, String type) throws Exception {
    String text = Files.readString(pem, US_ASCII);
    assertThat(text).startsWith("-----BEGIN " + type + "-----\n").endsWith("-----END " + type + "-----\n");
    String body = text.replace("-----BEGIN " + type + "-----", "").replace("-----END " + type + "-----", "");
    return Base64.getMimeDecoder().decode(body);
  }
}
