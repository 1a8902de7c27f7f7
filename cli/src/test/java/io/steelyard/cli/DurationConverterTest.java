package io.steelyard.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine.TypeConversionException;

class DurationConverterTest {

  @Test
  void readsOperatorUnits() {
    assertThat(DurationConverter.parse("500ms")).isEqualTo(Duration.ofMillis(500));
    assertThat(DurationConverter.parse("3s")).isEqualTo(Duration.ofSeconds(3));
    assertThat(DurationConverter.parse("2m")).isEqualTo(Duration.ofMinutes(2));
    assertThat(DurationConverter.parse("1h")).isEqualTo(Duration.ofHours(1));
  }

  @Test
  void bareNumberIsSeconds() {
    assertThat(DurationConverter.parse("10")).isEqualTo(Duration.ofSeconds(10));
  }

  @Test
  void acceptsIso8601() {
    assertThat(DurationConverter.parse("PT1.5S")).isEqualTo(Duration.ofMillis(1500));
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "s", "-3s", "3 s", "3d", "1.5s", "PT-1S", "abc", "3sec"})
  void refusesAnythingElseNamingTheInput(String text) {
    assertThatThrownBy(() -> DurationConverter.parse(text))
        .isInstanceOf(TypeConversionException.class)
        .hasMessageContaining("'" + text + "'")
        .hasMessageContaining("expected: e.g. 500ms, 3s, 2m");
  }

  @Test
  void formatsInTheLargestExactUnit() {
    assertThat(DurationConverter.format(Duration.ofMillis(500))).isEqualTo("500ms");
    assertThat(DurationConverter.format(Duration.ofSeconds(90))).isEqualTo("90s");
    assertThat(DurationConverter.format(Duration.ofMinutes(2))).isEqualTo("2m");
  }
}
