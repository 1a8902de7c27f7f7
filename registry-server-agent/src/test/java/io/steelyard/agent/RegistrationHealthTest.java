package io.steelyard.agent;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** What health status each registration state stands for ({@link RegisteredServerTest} drives it). */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class RegistrationHealthTest {

  @Test
  void onlyARegisteredOrRecoveringInstanceServes() {
    for (RegistrationState s : RegistrationState.values()) {
      if (s == RegistrationState.REFUSED) {
        assertThat(RegistrationHealth.servingStatus(s)).as("REFUSED keeps the status").isNull();
        continue;
      }
      boolean serving = s == RegistrationState.REGISTERED || s == RegistrationState.RECOVERING;
      assertThat(RegistrationHealth.servingStatus(s))
          .as("%s", s)
          .isEqualTo(serving ? ServingStatus.SERVING : ServingStatus.NOT_SERVING);
    }
  }
}
