package io.steelyard.registry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class ValueCodecTest {

  private static DecodedValue decode(String s) {
    return ValueCodec.decode(s.getBytes(StandardCharsets.UTF_8));
  }

  private static DecodedValue.Accepted accepted(String s) {
    DecodedValue d = decode(s);
    assertThat(d).as(s).isInstanceOf(DecodedValue.Accepted.class);
    return (DecodedValue.Accepted) d;
  }

  private static String rejectedReason(byte[] v) {
    DecodedValue d = ValueCodec.decode(v);
    assertThat(d).isInstanceOf(DecodedValue.Rejected.class);
    return ((DecodedValue.Rejected) d).reason();
  }

  // --- Golden values: what Go's encoding/json writes for etcd's endpoints internal.Update{Op, Addr, Metadata}.

  @Test
  void jsonGoldenWeightOnly() {
    assertThat(ValueCodec.encodeToString(ServiceInstance.of("greeter", "10.0.0.7:50051", 5), ValueFormat.JSON))
        .isEqualTo("{\"Op\":0,\"Addr\":\"10.0.0.7:50051\",\"Metadata\":{\"weight\":5}}");
  }

  @Test
  void jsonGoldenMetadataKeysSortedAsGoSortsMapKeys() {
    ServiceInstance i =
        new ServiceInstance("greeter", "10.0.0.7:50051", 5, Map.of("zone", "a", "Zone", "b", "app", "c"));
    // Go: json.Marshal(map[string]any{"weight":5,"zone":"a","Zone":"b","app":"c"}) sorts by bytes.
    assertThat(ValueCodec.encodeToString(i, ValueFormat.JSON))
        .isEqualTo(
            "{\"Op\":0,\"Addr\":\"10.0.0.7:50051\",\"Metadata\":{\"Zone\":\"b\",\"app\":\"c\",\"weight\":5,\"zone\":\"a\"}}");
  }

  @Test
  void jsonGoldenEscapesLikeGo() {
    ServiceInstance i =
        new ServiceInstance(
            "greeter",
            "[::1]:8080",
            0,
            Map.of("html", "<a href=\"x\">&</a>", "ctl", "t\tn\nr\rb\bf\fx\u0001\u001f", "uni", "é\u2028\u2029\u007f"));
    assertThat(ValueCodec.encodeToString(i, ValueFormat.JSON))
        .isEqualTo(
            "{\"Op\":0,\"Addr\":\"[::1]:8080\",\"Metadata\":{"
                + "\"ctl\":\"t\\tn\\nr\\rb\\bf\\fx\\u0001\\u001f\","
                + "\"html\":\"\\u003ca href=\\\"x\\\"\\u003e\\u0026\\u003c/a\\u003e\","
                + "\"uni\":\"é\\u2028\\u2029\u007f\","
                + "\"weight\":0}}");
  }

  @Test
  void pipeGolden() {
    assertThat(ValueCodec.encodeToString(ServiceInstance.of("g", "10.0.0.7:50051", 5), ValueFormat.PIPE))
        .isEqualTo("10.0.0.7:50051|5");
  }

  @Test
  void plainCannotCarryAWeight() {
    assertThat(ValueCodec.encodeToString(ServiceInstance.of("g", "h:1", 1), ValueFormat.PLAIN)).isEqualTo("h:1");
    assertThatThrownBy(() -> ValueCodec.encode(ServiceInstance.of("g", "h:1", 2), ValueFormat.PLAIN))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("PLAIN");
  }

  @Test
  void aPlainValueWithAWeightIsWrittenAsPipe() {
    assertThat(ValueFormat.PLAIN.forWeight(1)).isEqualTo(ValueFormat.PLAIN);
    assertThat(ValueFormat.PLAIN.forWeight(0)).isEqualTo(ValueFormat.PIPE);
    assertThat(ValueFormat.PLAIN.forWeight(5)).isEqualTo(ValueFormat.PIPE);
    assertThat(ValueFormat.PIPE.forWeight(1)).isEqualTo(ValueFormat.PIPE);
    assertThat(ValueFormat.JSON.forWeight(5)).isEqualTo(ValueFormat.JSON);
    assertThat(ValueCodec.encodeToString(ServiceInstance.of("g", "h:1", 5), ValueFormat.PLAIN.forWeight(5)))
        .isEqualTo("h:1|5");
  }

  @Test
  void pipeCannotCarryMetadata() {
    assertThatThrownBy(
            () -> ValueCodec.encode(new ServiceInstance("g", "h:1", 1, Map.of("z", "a")), ValueFormat.PIPE))
        .isInstanceOf(IllegalArgumentException.class);
  }

  // --- Reading each format.

  @Test
  void readsPipe() {
    DecodedValue.Accepted a = accepted("10.0.0.7:50051|5");
    assertThat(a.address()).isEqualTo("10.0.0.7:50051");
    assertThat(a.weight()).isEqualTo(5);
    assertThat(a.format()).isEqualTo(ValueFormat.PIPE);
  }

  @Test
  void readsPlainWithDefaultWeight() {
    DecodedValue.Accepted a = accepted("10.0.0.7:50051");
    assertThat(a.weight()).isEqualTo(1);
    assertThat(a.format()).isEqualTo(ValueFormat.PLAIN);
  }

  @Test
  void readsGoNamingJsonWithMetadata() {
    DecodedValue.Accepted a = accepted("{\"Op\":0,\"Addr\":\"10.0.0.7:50051\",\"Metadata\":{\"weight\":5,\"zone\":\"a\"}}");
    assertThat(a.weight()).isEqualTo(5);
    assertThat(a.metadata()).containsExactly(Map.entry("zone", "a"));
    assertThat(a.format()).isEqualTo(ValueFormat.JSON);
  }

  @Test
  void readsGoNamingJsonWithNullMetadata() {
    DecodedValue.Accepted a = accepted("{\"Op\":0,\"Addr\":\"10.0.0.7:50051\",\"Metadata\":null}");
    assertThat(a.weight()).isEqualTo(1);
    assertThat(a.metadata()).isEmpty();
  }

  @Test
  void readsJsonWithWhitespaceStringWeightAndNonStringMetadata() {
    DecodedValue.Accepted a =
        accepted(" { \"Addr\" : \"h:1\", \"Op\": 0, \"Metadata\": {\"weight\": \"7\", \"n\": 3, \"t\": [1,{\"a\":true}], \"x\": null} } ");
    assertThat(a.weight()).isEqualTo(7);
    assertThat(a.metadata()).containsExactly(Map.entry("n", "3"), Map.entry("t", "[1,{\"a\":true}]"));
  }

  @Test
  void readsJsonWeightWrittenAsFloatWhenIntegral() {
    assertThat(accepted("{\"Op\":0,\"Addr\":\"h:1\",\"Metadata\":{\"weight\":5.0}}").weight()).isEqualTo(5);
  }

  @Test
  void readsJsonMetadataThatIsNotAnObjectAsNoMetadata() {
    DecodedValue.Accepted a = accepted("{\"Op\":0,\"Addr\":\"h:1\",\"Metadata\":\"zone-a\"}");
    assertThat(a.weight()).isEqualTo(1);
    assertThat(a.metadata()).isEmpty();
  }

  @Test
  void readsGoEscapesBack() {
    ServiceInstance i = new ServiceInstance("g", "h:1", 3, Map.of("k", "<&>\u2028\"\\\u0000é\uD83D\uDE00"));
    DecodedValue.Accepted a = (DecodedValue.Accepted) ValueCodec.decode(ValueCodec.encode(i, ValueFormat.JSON));
    assertThat(a.toInstance("g")).isEqualTo(i);
  }

  // --- Rejections: a reason, never an exception.

  @ParameterizedTest
  @ValueSource(
      strings = {
        "", " ", "|", "h:1|", "|5", "h:1|-1", "h:1|abc", "h:1|1000001", "h:1|99999999999999999999",
        "h:1|5|6", "h:1| 5", "h:0|5", "nohost", "{", "{\"Op\":0,\"Addr\":\"h:1\"", "[1,2]",
        "{\"Op\":1,\"Addr\":\"h:1\"}", "{\"Op\":0}", "{\"Op\":0,\"Addr\":5}", "{\"Op\":0,\"Addr\":\"bad\"}",
        "{\"Op\":0,\"Addr\":\"h:1\",\"Metadata\":{\"weight\":-1}}",
        "{\"Op\":0,\"Addr\":\"h:1\",\"Metadata\":{\"weight\":1.5}}",
        "{\"Op\":0,\"Addr\":\"h:1\",\"Metadata\":{\"weight\":1e999999}}",
        "{\"Op\":0,\"Addr\":\"h:1\",\"Metadata\":{\"weight\":true}}",
        "{\"Op\":0,\"Addr\":\"h:1\"} trailing", "{\"Op\":0,\"Addr\":\"h:1\",}", "{'Op':0}"
      })
  void rejectsMalformedValuesWithAReason(String value) {
    assertThat(rejectedReason(value.getBytes(StandardCharsets.UTF_8))).isNotBlank().doesNotContain("\n");
  }

  /** What a lenient JSON parser would let through; the reader is strict, as Go's is. */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "{\"Op\":0,\"Addr\":\"h:1\" /* c */}",
        "{\"Op\":0,\"Addr\":\"h:1\"} // c",
        "{\"Op\":00,\"Addr\":\"h:1\"}",
        "{\"Op\":NaN,\"Addr\":\"h:1\"}",
        "{Op:0,\"Addr\":\"h:1\"}",
        "{\"Op\":0,\"Addr\":h:1}",
        "{\"Op\":0;\"Addr\":\"h:1\"}",
        "{\"Op\":0,\"Addr\"=>\"h:1\"}",
        "{\"Op\":0,\"Addr\":\"h:1\\'\"}",
        "{\"Op\":0,\"Addr\":\"h:1\u0001\"}",
        "{\"Op\":0,\"Addr\":\"h:1\"}{\"Op\":0}",
        "{\"Op\":0,\"Addr\":\"h:1\",\"Metadata\":{\"n\":1e99999}}",
        "{\"Op\":0,\"Addr\":\"h:1\",\"Metadata\":{\"n\":1"
            + "0000000000000000000000000000000000000000000000000000000000000000000000}}"
      })
  void rejectsWhatOnlyALenientParserWouldAccept(String value) {
    assertThat(rejectedReason(value.getBytes(StandardCharsets.UTF_8)))
        .startsWith("json value: ")
        .doesNotContain("\n");
  }

  @Test
  void aDuplicateKeyTakesTheLastValueAsGoDoes() {
    assertThat(accepted("{\"Op\":0,\"Addr\":\"h:1\",\"Addr\":\"h:2\"}").address()).isEqualTo("h:2");
  }

  @Test
  void rejectsInvalidUtf8() {
    assertThat(rejectedReason(new byte[] {'h', ':', '1', (byte) 0xff, (byte) 0xfe}))
        .contains("UTF-8");
  }

  @Test
  void rejectsHugeValuesWithoutParsingThem() {
    byte[] mib = new byte[1 << 20];
    java.util.Arrays.fill(mib, (byte) '{');
    assertThat(rejectedReason(mib)).contains("bytes");
  }

  @Test
  void rejectsDeepNesting() {
    String deep = "{\"Op\":0,\"Addr\":\"h:1\",\"Metadata\":{\"a\":" + "[".repeat(5000) + "]".repeat(5000) + "}}";
    assertThat(rejectedReason(deep.getBytes(StandardCharsets.UTF_8)))
        .isEqualTo("json value: nesting deeper than 32 at $.Metadata.a" + "[0]".repeat(31));
  }

  @Test
  void rejectsNull() {
    assertThat(rejectedReason(null)).isEqualTo("empty value");
  }
}
