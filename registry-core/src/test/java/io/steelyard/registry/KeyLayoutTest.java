package io.steelyard.registry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class KeyLayoutTest {

  @Test
  void defaultLayoutIsServicesPrefix() {
    KeyLayout keys = KeyLayout.defaults();
    assertThat(keys.servicePrefix("greeter")).isEqualTo("/services/greeter/");
    assertThat(keys.instanceKey("greeter", "10.0.0.7:50051"))
        .isEqualTo("/services/greeter/10.0.0.7:50051");
  }

  @Test
  void drainNotesLieOutsideEveryServicePrefix() {
    KeyLayout keys = KeyLayout.of("/registry");
    assertThat(keys.drainNoteKey("greeter", "10.0.0.7:50051"))
        .isEqualTo("/registry/.drained/greeter/10.0.0.7:50051")
        .startsWith(keys.drainNotePrefix("greeter"))
        .doesNotStartWith(keys.servicePrefix("greeter"));
    assertThatThrownBy(() -> keys.drainNoteKey("greeter", "h:1/../x"))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void serviceConfigsLieOutsideEveryServicePrefix() {
    KeyLayout keys = KeyLayout.of("/registry");
    assertThat(keys.serviceConfigKey("greeter"))
        .isEqualTo("/registry/.config/greeter")
        .doesNotStartWith(keys.servicePrefix("greeter"));
    assertThatThrownBy(() -> keys.serviceConfigKey("../greeter"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> keys.servicePrefix(".config"))
        .as(".config can never be a service name")
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void servicePrefixEndsWithSlashSoNamesDoNotOverlap() {
    KeyLayout keys = KeyLayout.defaults();
    assertThat(keys.instanceKey("greeter2", "h:1")).doesNotStartWith(keys.servicePrefix("greeter"));
  }

  @Test
  void customPrefixWithoutLeadingSlashMatchesGoResolverKeys() {
    assertThat(KeyLayout.of("services/").servicePrefix("greeter")).isEqualTo("services/greeter/");
  }

  @Test
  void badServiceNamesNeverBecomeKeys() {
    KeyLayout keys = KeyLayout.defaults();
    assertThatThrownBy(() -> keys.servicePrefix("../other")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> keys.instanceKey("a/b", "h:1")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> keys.instanceKey("a", "h:1/../x")).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void instanceIdIsTheSuffixUnderTheServicePrefix() {
    KeyLayout keys = KeyLayout.defaults();
    assertThat(keys.instanceId("greeter", "/services/greeter/10.0.0.7:1")).contains("10.0.0.7:1");
    assertThat(keys.instanceId("greeter", "/services/greeter/")).isEmpty();
    assertThat(keys.instanceId("greeter", "/services/greeter2/x")).isEmpty();
  }
}
