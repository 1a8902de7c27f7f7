package io.steelyard.registry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

class ValidationTest {

  @ParameterizedTest
  @ValueSource(strings = {"greeter", "a", "Greeter-2", "my.service_v1", "0abc"})
  void acceptsServiceNames(String name) {
    assertThat(Validation.checkServiceName(name)).isEqualTo(name);
  }

  @ParameterizedTest
  @ValueSource(strings = {"", ".", "..", "../x", "a/b", "/a", "a b", " a", "a\tb", "a\nb", "-a", "_a", ".a", "a\u0000", "é"})
  void refusesServiceNamesThatCouldEscapeTheirPrefix(String name) {
    assertThatThrownBy(() -> Validation.checkServiceName(name))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("service: '")
        .hasMessageNotContaining("\n");
  }

  @Test
  void refusesServiceNamesLongerThan253() {
    assertThat(Validation.isValidServiceName("a".repeat(253))).isTrue();
    assertThat(Validation.isValidServiceName("a".repeat(254))).isFalse();
    assertThat(Validation.isValidServiceName(null)).isFalse();
  }

  @ParameterizedTest
  @ValueSource(strings = {"10.0.0.7:50051", "localhost:1", "svc.ns.cluster.local:65535", "[::1]:8080", "[fe80::1%eth0]:443", "[2001:db8::7]:50051"})
  void acceptsAddresses(String address) {
    assertThat(Validation.checkAddress(address)).isEqualTo(address);
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "10.0.0.7", "10.0.0.7:", ":80", "10.0.0.7:0", "10.0.0.7:65536", "::1:80", "[::1]", "[::1]80", "host:port", "a b:80", "h/x:80", "-h:80", "10.0.0.7:+80", "[zz]:80"})
  void refusesBadAddresses(String address) {
    assertThatThrownBy(() -> Validation.checkAddress(address))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("address: '");
  }

  /** The regular expressions the hand-written checks replace, as the specification. */
  private static final java.util.regex.Pattern SERVICE_SPEC =
      java.util.regex.Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,252}");
  private static final java.util.regex.Pattern HOST_SPEC = java.util.regex.Pattern.compile(
      "(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
          + "(?:\\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*");
  private static final java.util.regex.Pattern PORT_SPEC = java.util.regex.Pattern.compile("[0-9]{1,5}");

  @Test
  void handWrittenChecksAgreeWithTheRegularExpressionsTheyReplace() {
    java.util.Random random = new java.util.Random(42);
    String alphabet = "aZ09.-_:/ \n\u00e9";
    for (int round = 0; round < 200_000; round++) {
      int length = random.nextInt(round % 100 == 0 ? 300 : 12);
      StringBuilder b = new StringBuilder(length);
      for (int i = 0; i < length; i++) {
        b.append(random.nextInt(4) == 0 ? alphabet.charAt(random.nextInt(alphabet.length())) : 'a');
      }
      String s = b.toString();
      assertThat(Validation.isValidServiceName(s)).as("service %s", s).isEqualTo(SERVICE_SPEC.matcher(s).matches());
      assertThat(Validation.isHostName(s)).as("host %s", s).isEqualTo(HOST_SPEC.matcher(s).matches());
      assertThat(Validation.isPortDigits(s)).as("port %s", s).isEqualTo(PORT_SPEC.matcher(s).matches());
    }
    for (String s : new String[] {"a".repeat(63), "a".repeat(64), "a." + "b".repeat(63), "a.", ".a", "a..b",
        "a-", "-a", "a-b", "1.2.3.4", ("a".repeat(63) + ".").repeat(3) + "a".repeat(61),
        ("a".repeat(63) + ".").repeat(3) + "a".repeat(62), "12345", "123456", "0"}) {
      assertThat(Validation.isHostName(s)).as("host %s", s).isEqualTo(HOST_SPEC.matcher(s).matches());
      assertThat(Validation.isPortDigits(s)).as("port %s", s).isEqualTo(PORT_SPEC.matcher(s).matches());
    }
  }

  @Test
  void weightsAreZeroToOneMillion() {
    assertThat(Validation.checkWeight(0)).isZero();
    assertThat(Validation.checkWeight(1_000_000)).isEqualTo(1_000_000);
    assertThatThrownBy(() -> Validation.checkWeight(-1)).hasMessage("weight: -1 (expected: 0..1000000)");
    assertThatThrownBy(() -> Validation.checkWeight(1_000_001)).hasMessageStartingWith("weight: 1000001");
  }

  @Test
  void prefixesAreNormalisedAndChecked() {
    assertThat(Validation.checkPrefix("/services/")).isEqualTo("/services");
    assertThat(Validation.checkPrefix("services")).isEqualTo("services");
    assertThat(Validation.checkPrefix("/a/b.c")).isEqualTo("/a/b.c");
    for (String bad : new String[] {"", "/", "//", "/a//b", "/a/../b", "/./a", "/a b", "/a\nb"}) {
      assertThatThrownBy(() -> Validation.checkPrefix(bad))
          .as(bad)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageStartingWith("prefix: ");
    }
  }

  @Test
  void errorMessagesEscapeControlCharacters() {
    assertThatThrownBy(() -> Validation.checkServiceName("a\nb"))
        .hasMessageStartingWith("service: 'a\\u000ab'");
  }

  @Test
  void quoteEscapesEveryCharacterThatCouldSplitOrForgeALogLine() {
    assertThat(Validation.quote("/services/g/a\r\nWARN forged\u0085\u2028\u007f"))
        .isEqualTo("'/services/g/a\\u000d\\u000aWARN forged\\u0085\\u2028\\u007f'");
    assertThat(Validation.quote(null)).isEqualTo("null");
  }

  @Test
  void quoteIsBoundedButShowsAWholeOrdinaryKey() {
    String key = "/prod/eu-west-1/services/greeter-with-a-long-name/[2001:db8::1234:5678]:50051";
    assertThat(Validation.quote(key)).isEqualTo("'" + key + "'");
    assertThat(Validation.quote("x".repeat(10_000)))
        .hasSize(Validation.QUOTE_MAX_CHARS + 5)
        .endsWith("x...'");
  }
}
