package io.steelyard.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.steelyard.registry.Validation;
import io.steelyard.registry.admin.InstanceWrite;
import org.junit.jupiter.api.Test;

class ActionsTest {

  @Test
  void typedWeightIsReadAsANumber() {
    assertThat(Actions.weight(" 8 ")).isEqualTo(8);
    assertThat(Actions.weight("0")).isZero();
    assertThat(Actions.weight("1000000")).isEqualTo(Validation.MAX_WEIGHT);
  }

  @Test
  void weightOutOfRangeIsRefusedWithTheSameMessageAsTheCli() {
    for (long w : new long[] {-1, 1_000_001, Long.MAX_VALUE}) {
      String cli = null;
      try {
        Validation.checkWeight(w);
      } catch (IllegalArgumentException e) {
        cli = e.getMessage();
      }
      assertThatThrownBy(
              () -> InstanceWrite.setWeight("greeter", "10.0.0.7:50051",
                  Actions.weight(Long.toString(w))))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage(cli);
    }
  }

  @Test
  void weightThatIsNotANumberIsRefusedNamingIt() {
    assertThatThrownBy(() -> Actions.weight("ten"))
        .hasMessage("weight: 'ten' (expected: 0..1000000)");
    assertThatThrownBy(() -> Actions.weight(null))
        .hasMessage("weight: '' (expected: 0..1000000)");
  }
}
