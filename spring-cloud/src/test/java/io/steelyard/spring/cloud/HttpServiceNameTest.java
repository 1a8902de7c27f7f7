package io.steelyard.spring.cloud;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.steelyard.spring.SteelyardProperties;
import org.junit.jupiter.api.Test;

class HttpServiceNameTest {

  private final SteelyardCloudProperties cloud = new SteelyardCloudProperties();
  private final SteelyardProperties steelyard = new SteelyardProperties();

  @Test
  void isTheApplicationNameWithoutAGrpcRegistration() {
    assertThat(name("orders", null)).isEqualTo("orders");
  }

  @Test
  void getsTheHttpSuffixWhenTheGrpcServerRegistersTheSameName() {
    assertThat(name("orders", "orders")).isEqualTo("orders-http");
  }

  @Test
  void followsTheStartersServiceNameBeforeTheApplicationName() {
    steelyard.getRegistration().setService("catalog");

    assertThat(name("orders", null)).isEqualTo("catalog");
    assertThat(name("orders", "catalog")).isEqualTo("catalog-http");
  }

  @Test
  void anExplicitNameWins() {
    cloud.getRegistration().setService("orders-web");

    assertThat(name("orders", "orders")).isEqualTo("orders-web");
  }

  @Test
  void anExplicitNameEqualToTheGrpcOneIsRefused() {
    cloud.getRegistration().setService("orders");

    assertThatThrownBy(() -> name("orders", "orders"))
        .hasMessage("steelyard.cloud.registration.service: 'orders' is the name the gRPC server"
            + " registers as (expected: another name, or unset for 'orders-http')");
  }

  @Test
  void aNameTheRegistryRefusesIsNamed() {
    cloud.getRegistration().setService("orders/../payments");

    assertThatThrownBy(() -> name("x", null))
        .hasMessageStartingWith("steelyard.cloud.registration.service: ");
  }

  @Test
  void noNameAtAllIsRefused() {
    assertThatThrownBy(() -> name(null, null))
        .hasMessageContaining("not set, and spring.application.name neither");
  }

  private String name(String applicationName, String grpcService) {
    return SteelyardCloudRegistrationAutoConfiguration.httpService(
        cloud, steelyard.getRegistration(), applicationName, grpcService);
  }
}
