package io.steelyard.xds;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class GrantsTest {

  private static final Grants GRANTS =
      Grants.parse(
          """
          {"grants": [
            {"identity": "spiffe://test/greeter-client", "services": ["greeter", "billing-*"]},
            {"identity": "spiffe://test/ops/*", "services": ["*"]}
          ]}
          """);

  @Test
  void anIdentityReadsTheServicesItsGrantNamesAndTheGlobsMatch() {
    assertThat(GRANTS.allows("spiffe://test/greeter-client", "greeter")).isTrue();
    assertThat(GRANTS.allows("spiffe://test/greeter-client", "billing-eu")).isTrue();
    assertThat(GRANTS.allows("spiffe://test/greeter-client", "billing")).isFalse();
    assertThat(GRANTS.allows("spiffe://test/greeter-client", "greeter2")).isFalse();
  }

  @Test
  void anIdentityGlobGrantsEveryMatchingIdentity() {
    assertThat(GRANTS.allows("spiffe://test/ops/console", "billing")).isTrue();
    assertThat(GRANTS.allows("spiffe://test/opsx", "billing")).isFalse();
  }

  @Test
  void anIdentityNoGrantNamesReadsNothing() {
    assertThat(GRANTS.allows("spiffe://test/stranger", "greeter")).isFalse();
    assertThat(Grants.parse("{\"grants\": []}").allows("a", "greeter")).isFalse();
  }

  @Test
  void globCharactersOtherThanTheStarMatchThemselves() {
    Grants g = Grants.parse("{\"grants\": [{\"identity\": \"a.b\", \"services\": [\"x.y\"]}]}");
    assertThat(g.allows("a.b", "x.y")).isTrue();
    assertThat(g.allows("aXb", "x.y")).isFalse();
    assertThat(g.allows("a.b", "xzy")).isFalse();
  }

  @Test
  void aSyntaxErrorIsNamedWithItsLine() {
    assertThatThrownBy(() -> Grants.parse("{\"grants\": [\n  {\"identity\": \"a\",, \"services\": []}\n]}"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("line 2");
  }

  @Test
  void aMissingOrMistypedFieldIsNamedWithItsGrant() {
    assertThatThrownBy(() -> Grants.parse("{\"grants\": [{\"identity\": \"a\", \"services\": [\"x\"]}, {\"identity\": \"b\"}]}"))
        .hasMessageContaining("grants[1].services");
    assertThatThrownBy(() -> Grants.parse("{\"grants\": [{\"identity\": 3, \"services\": []}]}"))
        .hasMessageContaining("grants[0].identity");
    assertThatThrownBy(() -> Grants.parse("{\"grants\": [{\"identity\": \"a\", \"services\": [\"\"]}]}"))
        .hasMessageContaining("grants[0].services[0]");
    assertThatThrownBy(() -> Grants.parse("[]")).hasMessageContaining("expected {\"grants\"");
  }
}
