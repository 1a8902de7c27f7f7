package io.steelyard.registry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URI;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class EtcdConnectionTest {

  @Test
  void parsesCommaSeparatedEndpointsAndDefaultsToHttp() {
    assertThat(EtcdConnection.parseEndpoints(" http://a:2379, b:2380 ,https://[::1]:2379/"))
        .containsExactly(URI.create("http://a:2379"), URI.create("http://b:2380"), URI.create("https://[::1]:2379"));
  }

  @Test
  void refusesEndpointsThatAreNotHostAndPort() {
    for (String bad : new String[] {"", ",", "ftp://a:1", "http://a", "http://a:1/path", "http://u@a:1", "a b:1"}) {
      assertThatThrownBy(() -> EtcdConnection.parseEndpoints(bad))
          .as(bad)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageStartingWith("endpoints: ");
    }
  }

  @Test
  void environmentVariableWinsOverDefault() {
    assertThat(EtcdConnection.endpointsFrom(Map.of())).isEqualTo("http://127.0.0.1:2379");
    assertThat(EtcdConnection.endpointsFrom(Map.of("STEELYARD_ETCD_ENDPOINTS", "http://e:1")))
        .isEqualTo("http://e:1");
  }

  @Test
  void equalConfigurationsAreEqualSoClientsCanBeShared() {
    EtcdConnection a = EtcdConnection.builder().endpoints("a:1,b:2").user("u", "p").build();
    EtcdConnection b = EtcdConnection.builder().endpoints("http://a:1,http://b:2").user("u", "p").build();
    assertThat(a).isEqualTo(b).hasSameHashCodeAs(b);
    assertThat(a).isNotEqualTo(EtcdConnection.builder().endpoints("a:1,b:2").user("u", "q").build());
  }

  @Test
  void toStringNeverShowsThePassword() {
    assertThat(EtcdConnection.builder().endpoints("a:1").user("u", "hunter2").build().toString())
        .contains("u")
        .doesNotContain("hunter2");
  }

  @Test
  void builderRefusesASettingTwiceAndBadValues() {
    assertThatThrownBy(() -> EtcdConnection.builder().endpoints("a:1").endpoints("b:1"))
        .isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> EtcdConnection.builder().connectTimeout(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> EtcdConnection.builder().userPassword("nopassword"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageNotContaining("nopassword");
    assertThatThrownBy(() -> EtcdConnection.builder().build()).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void securityOptionsReadLikeTheCliFlags() throws Exception {
    java.nio.file.Path ca = java.nio.file.Files.createTempFile("ca", ".pem");
    try {
      EtcdConnection c = EtcdConnection.builder().endpoints("https://a:1")
          .securityOptions("u:p", ca, null, null).build();
      assertThat(c.user()).isEqualTo("u");
      assertThat(c.tls()).isTrue();
      assertThat(EtcdConnection.builder().endpoints("a:1").securityOptions(null, null, null, null).build())
          .isEqualTo(EtcdConnection.of("a:1"));
      assertThatThrownBy(() -> EtcdConnection.builder().securityOptions(null, null, ca, ca))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("tls: --cert and --key need --cacert");
      assertThatThrownBy(() -> EtcdConnection.builder().securityOptions("nopassword", null, null, null))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageNotContaining("nopassword");
    } finally {
      java.nio.file.Files.delete(ca);
    }
  }
}
