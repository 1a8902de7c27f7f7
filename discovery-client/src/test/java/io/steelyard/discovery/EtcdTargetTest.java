package io.steelyard.discovery;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.steelyard.registry.EtcdConnection;
import java.net.URI;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class EtcdTargetTest {

  private static final EtcdConnection DEFAULT = EtcdConnection.of("http://10.9.9.9:2379");

  @Test
  void noAuthorityUsesTheDefaultConnection() {
    EtcdTarget t = EtcdTarget.parse(URI.create("etcd:///greeter"), () -> DEFAULT);
    assertThat(t.service()).isEqualTo("greeter");
    assertThat(t.connection()).isEqualTo(DEFAULT);
  }

  @Test
  void authorityListsTheEndpoints() {
    EtcdTarget t = EtcdTarget.parse(URI.create("etcd://h1:2379,10.0.0.2:2380/greeter.v1"), () -> {
      throw new AssertionError("default must not be consulted");
    });
    assertThat(t.service()).isEqualTo("greeter.v1");
    assertThat(t.connection().endpointsString()).isEqualTo("http://h1:2379,http://10.0.0.2:2380");
  }

  @Test
  void queryListsTheEndpoints() {
    EtcdTarget t = EtcdTarget.parse(URI.create("etcd:///greeter?endpoints=h1:2379,10.0.0.2:2380,[::1]:2381"), () -> {
      throw new AssertionError("default must not be consulted");
    });
    assertThat(t.service()).isEqualTo("greeter");
    assertThat(t.connection().endpointsString()).isEqualTo("http://h1:2379,http://10.0.0.2:2380,http://[::1]:2381");
  }

  @Test
  void queryMayBePercentEncoded() {
    EtcdTarget t = EtcdTarget.parse(URI.create("etcd:///greeter?endpoints=h1%3A2379%2Ch2%3A2379"), () -> DEFAULT);
    assertThat(t.connection().endpointsString()).isEqualTo("http://h1:2379,http://h2:2379");
  }

  @Test
  void theQueryMayNameTheCallersZone() {
    assertThat(EtcdTarget.parse(URI.create("etcd:///greeter?zone=eu-1a"), () -> DEFAULT).zone())
        .isEqualTo("eu-1a");
    EtcdTarget both =
        EtcdTarget.parse(URI.create("etcd:///greeter?endpoints=h1:2379&zone=eu-1a"), () -> DEFAULT);
    assertThat(both.zone()).isEqualTo("eu-1a");
    assertThat(both.connection().endpointsString()).isEqualTo("http://h1:2379");
    assertThat(EtcdTarget.parse(URI.create("etcd://h1:2379/greeter?zone=b"), () -> DEFAULT).zone())
        .isEqualTo("b");
    assertThat(EtcdTarget.parse(URI.create("etcd:///greeter"), () -> DEFAULT).zone()).isNull();
  }

  @ParameterizedTest
  @ValueSource(strings = {
    "etcd:greeter", "etcd:///", "etcd:///a/b", "etcd:///..", "etcd:///greeter?x=1",
    "etcd:///greeter#f", "etcd:///gr%20eeter", "etcd:///a%2Fb", "etcd://h1/greeter",
    "etcd://user:pw@h1:2379/greeter", "etcd:///-x", "etcd:///greeter?endpoints=",
    "etcd:///greeter?endpoints=h1:2379&x=1", "etcd://h1:2379/greeter?endpoints=h2:2379",
    "etcd:///greeter?endpoints=http://h1:2379", "etcd:///greeter?endpoints=h1",
    "etcd:///greeter?zone=", "etcd:///greeter?zone=a&zone=b", "etcd:///greeter?zone=a%20b"
  })
  void invalidTargetsNameTheTargetAndTheExpectedForm(String target) {
    assertThatThrownBy(() -> EtcdTarget.parse(URI.create(target), () -> DEFAULT))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("target '")
        .hasMessageContaining("expected");
  }
}
