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

  @Test
  void parseIsTheInverseOfInstanceKey() {
    for (KeyLayout keys : new KeyLayout[] {KeyLayout.defaults(), KeyLayout.of("/a/b"), KeyLayout.of("services/")}) {
      String key = keys.instanceKey("greeter-v2.eu_1", "10.0.0.7:50051");
      assertThat(keys.parse(key))
          .contains(new KeyLayout.InstanceKey("greeter-v2.eu_1", "10.0.0.7:50051"));
      assertThat(keys.serviceOf(key)).contains("greeter-v2.eu_1");
      assertThat(keys.instanceId("greeter-v2.eu_1", key)).contains("10.0.0.7:50051");
    }
  }

  @Test
  void parseTakesTheInstancePartAsInstanceIdDoes() {
    KeyLayout keys = KeyLayout.defaults();
    // Go's endpoints manager lets callers pick any suffix, slashes included.
    assertThat(keys.parse("/services/greeter/node-1/replica-2"))
        .contains(new KeyLayout.InstanceKey("greeter", "node-1/replica-2"));
    assertThat(keys.instanceId("greeter", "/services/greeter/node-1/replica-2"))
        .contains("node-1/replica-2");
  }

  @Test
  void malformedKeysParseToEmpty() {
    KeyLayout keys = KeyLayout.defaults();
    assertThat(keys.parse(null)).isEmpty();
    assertThat(keys.parse("")).isEmpty();
    assertThat(keys.parse("/services")).isEmpty();
    assertThat(keys.parse("/services/")).isEmpty();
    assertThat(keys.parse("/services/greeter")).as("no instance part").isEmpty();
    assertThat(keys.parse("/services/greeter/")).as("an empty instance part").isEmpty();
    assertThat(keys.parse("/services//h:1")).as("an empty service").isEmpty();
    assertThat(keys.parse("/services/bad name/h:1")).as("not a service name").isEmpty();
    assertThat(keys.parse("/services/-greeter/h:1")).as("not a service name").isEmpty();
    assertThat(keys.serviceOf("/services/greeter")).isEmpty();
  }

  @Test
  void keysOutsideThePrefixParseToEmpty() {
    KeyLayout keys = KeyLayout.of("/registry");
    assertThat(keys.parse("/services/greeter/h:1")).isEmpty();
    assertThat(keys.parse("/registry2/greeter/h:1")).as("a prefix of the prefix is not it").isEmpty();
    assertThat(keys.parse("registry/greeter/h:1")).isEmpty();
    assertThat(KeyLayout.of("/a/b").parse("/a/greeter/h:1")).isEmpty();
  }

  @Test
  void drainNotesAndServiceConfigsAreReservedNotInstances() {
    KeyLayout keys = KeyLayout.defaults();
    String note = keys.drainNoteKey("greeter", "h:1");
    String config = keys.serviceConfigKey("greeter");
    assertThat(keys.parse(note)).isEmpty();
    assertThat(keys.parse(config)).isEmpty();
    assertThat(keys.isReserved(note)).isTrue();
    assertThat(keys.isReserved(config)).isTrue();
    assertThat(keys.isReserved(keys.instanceKey("greeter", "h:1"))).isFalse();
    assertThat(keys.isReserved("/services/bad name/h:1")).isFalse();
    assertThat(keys.isReserved(null)).isFalse();
  }

  @Test
  void registryPrefixCoversEveryServicePrefix() {
    KeyLayout keys = KeyLayout.of("/registry/");
    assertThat(keys.registryPrefix()).isEqualTo("/registry/");
    assertThat(keys.servicePrefix("greeter")).startsWith(keys.registryPrefix());
    assertThat(keys.drainNotePrefix("greeter")).startsWith(keys.registryPrefix());
  }

  @Test
  void serviceOfAKeyIsTheSegmentAfterThePrefix() {
    KeyLayout layout = KeyLayout.defaults();

    assertThat(layout.serviceOf("/services/greeter/10.0.0.1:1")).contains("greeter");
    assertThat(layout.serviceOf("/services/.drained/greeter/10.0.0.1:1")).isEmpty();
    assertThat(layout.serviceOf("/services/greeter/")).isEmpty();
    assertThat(layout.serviceOf("/services/greeter")).isEmpty();
    assertThat(layout.serviceOf("/other/greeter/x")).isEmpty();
    assertThat(KeyLayout.of("/reg").serviceOf("/reg/a.b-c/x")).contains("a.b-c");
  }

  @Test
  void parseDrainNoteIsTheInverseOfDrainNoteKey() {
    for (KeyLayout keys : new KeyLayout[] {KeyLayout.defaults(), KeyLayout.of("/a/b"), KeyLayout.of("services/")}) {
      String note = keys.drainNoteKey("greeter-v2.eu_1", "10.0.0.7:50051");
      assertThat(keys.parseDrainNote(note))
          .contains(new KeyLayout.InstanceKey("greeter-v2.eu_1", "10.0.0.7:50051"));
      assertThat(keys.drainNoteKey(new KeyLayout.InstanceKey("greeter-v2.eu_1", "10.0.0.7:50051")))
          .isEqualTo(note);
    }
  }

  @Test
  void aDrainNoteOfAnyInstancePartRoundTrips() {
    KeyLayout keys = KeyLayout.defaults();
    // Keys other tools write may end in any suffix; their notes are named by the same part.
    KeyLayout.InstanceKey instance = keys.parse("/services/greeter/node-1/replica-2").orElseThrow();
    String note = keys.drainNoteKey(instance);
    assertThat(note).isEqualTo("/services/.drained/greeter/node-1/replica-2");
    assertThat(keys.parseDrainNote(note)).contains(instance);
  }

  @Test
  void onlyDrainNotesParseAsDrainNotes() {
    KeyLayout keys = KeyLayout.defaults();
    assertThat(keys.parseDrainNote(null)).isEmpty();
    assertThat(keys.parseDrainNote(keys.instanceKey("greeter", "h:1"))).isEmpty();
    assertThat(keys.parseDrainNote(keys.serviceConfigKey("greeter"))).isEmpty();
    assertThat(keys.parseDrainNote(keys.drainNotePrefix("greeter"))).as("no instance part").isEmpty();
    assertThat(keys.parseDrainNote("/services/.drained/greeter")).isEmpty();
    assertThat(keys.parseDrainNote("/services/.drained/bad name/h:1")).isEmpty();
    assertThat(KeyLayout.of("/registry").parseDrainNote("/services/.drained/greeter/h:1")).isEmpty();
  }

  @Test
  void aDrainNoteNeedsAnInstancePartAndAValidService() {
    KeyLayout keys = KeyLayout.defaults();
    assertThatThrownBy(() -> keys.drainNoteKey(new KeyLayout.InstanceKey("greeter", "")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("instanceId: empty");
    assertThatThrownBy(() -> keys.drainNoteKey(new KeyLayout.InstanceKey("../x", "h:1")))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
