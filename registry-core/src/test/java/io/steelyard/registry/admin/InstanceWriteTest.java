package io.steelyard.registry.admin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.steelyard.registry.DecodedValue;
import io.steelyard.registry.ValueFormat;
import java.util.Map;
import org.junit.jupiter.api.Test;

class InstanceWriteTest {

  private static final String KEY = "/services/greeter/10.0.0.7:50051";

  @Test
  void aWeightOutOfRangeIsRefusedWithTheValueAndTheRange() {
    assertThatThrownBy(() -> InstanceWrite.setWeight("greeter", "10.0.0.7:50051", 1_000_001))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("weight: 1000001 (expected: 0..1000000)");
    assertThatThrownBy(() -> InstanceWrite.undrain("greeter", "10.0.0.7:50051", -1))
        .hasMessage("weight: -1 (expected: 0..1000000)");
  }

  @Test
  void theServiceIsCheckedBeforeTheAddressAndTheAddressBeforeTheWeight() {
    assertThatThrownBy(() -> InstanceWrite.setWeight("../x", "nope", -1))
        .hasMessageStartingWith("service: '../x'");
    assertThatThrownBy(() -> InstanceWrite.setWeight("greeter", "nope", -1))
        .hasMessageStartingWith("address: 'nope'");
    assertThatThrownBy(() -> InstanceWrite.drain("greeter", ""))
        .hasMessageStartingWith("address: ");
  }

  @Test
  void aWriteCarriesItsWeightOnlyWhereOneWasGiven() {
    assertThat(InstanceWrite.setWeight("greeter", "10.0.0.7:50051", 8).weight()).hasValue(8);
    assertThat(InstanceWrite.undrain("greeter", "10.0.0.7:50051", 3).weight()).hasValue(3);
    assertThat(InstanceWrite.undrain("greeter", "10.0.0.7:50051").weight()).isEmpty();
    assertThat(InstanceWrite.drain("greeter", "10.0.0.7:50051").weight()).isEmpty();
    assertThat(InstanceWrite.deregister("greeter", "10.0.0.7:50051").kind())
        .isEqualTo(InstanceWrite.Kind.DEREGISTER);
  }

  @Test
  void aWeightSetSaysTheOldAndTheNewWeight() {
    InstanceWrite w = InstanceWrite.setWeight("greeter", "10.0.0.7:50051", 8);
    assertThat(new InstanceWrite.Result(w, KEY, instance(5, -1), instance(8, -1)).message())
        .isEqualTo("10.0.0.7:50051 weight 5 -> 8");
  }

  @Test
  void aDrainSaysWhatUndrainRestores() {
    InstanceWrite w = InstanceWrite.drain("greeter", "10.0.0.7:50051");
    assertThat(new InstanceWrite.Result(w, KEY, instance(5, -1), instance(0, 5)).message())
        .isEqualTo("10.0.0.7:50051 drained: weight 5 -> 0 (undrain restores 5)");
    RegisteredInstance drained = instance(0, 5);
    assertThat(new InstanceWrite.Result(w, KEY, drained, drained).message())
        .isEqualTo("10.0.0.7:50051 was already drained (weight 0; undrain restores 5)");
    RegisteredInstance zero = instance(0, -1);
    assertThat(new InstanceWrite.Result(w, KEY, zero, zero).message())
        .isEqualTo("10.0.0.7:50051 was already drained (weight 0)");
  }

  @Test
  void anUndrainOfAnInstanceThatIsNotDrainedSaysNothingChanged() {
    RegisteredInstance eight = instance(8, -1);
    InstanceWrite.Result r =
        new InstanceWrite.Result(InstanceWrite.undrain("greeter", "10.0.0.7:50051"), KEY, eight, eight);
    assertThat(r.message()).isEqualTo("10.0.0.7:50051 is not drained (weight 8); nothing changed");
    InstanceWrite.Result given =
        new InstanceWrite.Result(
            InstanceWrite.undrain("greeter", "10.0.0.7:50051", 3), KEY, instance(0, 5), instance(3, -1));
    assertThat(given.message()).isEqualTo("10.0.0.7:50051 weight 0 -> 3");
  }

  @Test
  void aDeregisterNamesTheDeletedKey() {
    InstanceWrite.Result r =
        new InstanceWrite.Result(InstanceWrite.deregister("greeter", "10.0.0.7:50051"), KEY, null, null);
    assertThat(r.message()).isEqualTo("deleted " + KEY);
  }

  private static RegisteredInstance instance(int weight, int drainedFrom) {
    return new RegisteredInstance(
        "greeter", KEY, "10.0.0.7:50051",
        new DecodedValue.Accepted("10.0.0.7:50051", weight, Map.of(), ValueFormat.PIPE),
        0x42, 7, -1, drainedFrom);
  }

  @Test
  void writesNameThemselvesForLogs() {
    assertThat(InstanceWrite.undrain("greeter", "10.0.0.7:50051", 3))
        .hasToString("undrain greeter 10.0.0.7:50051 3");
  }
}
