package io.steelyard.spring.cloud;

import static org.assertj.core.api.Assertions.assertThat;

import io.steelyard.balancer.spi.SlowStartConfig;
import io.steelyard.registry.ServiceInstance;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class ServiceViewTest {

  private static final Duration WINDOW = Duration.ofSeconds(10);

  private final AtomicLong now = new AtomicLong(1_000_000_000L);
  private final ServiceView view = new ServiceView("s", new SlowStartConfig(WINDOW.toNanos(), 1.0, 10), now::get);

  @Test
  void instancesOfTheFirstListDoNotRamp() {
    view.onInstances(List.of(i("10.0.0.1:80", 1), i("10.0.0.2:80", 1)));

    assertThat(view.picker().refreshAtNanos()).isEqualTo(InstancePicker.NEVER);
    assertThat(share(view.picker(), "10.0.0.2:80")).isBetween(0.48, 0.52);
  }

  @Test
  void anInstanceAddedLaterRampsFromWhenItAppearsAndReachesItsWeightAfterTheWindow() {
    view.onInstances(List.of(i("10.0.0.1:80", 1)));
    view.onInstances(List.of(i("10.0.0.1:80", 1), i("10.0.0.2:80", 1)));

    assertThat(share(view.picker(), "10.0.0.2:80")).isBetween(0.07, 0.11); // 0.1 against 1
    now.addAndGet(WINDOW.toNanos() / 2);
    assertThat(share(view.picker(), "10.0.0.2:80")).isBetween(0.31, 0.36); // 0.5 against 1
    now.addAndGet(WINDOW.toNanos());
    assertThat(share(view.picker(), "10.0.0.2:80")).isBetween(0.48, 0.52);
    assertThat(view.picker().refreshAtNanos()).isEqualTo(InstancePicker.NEVER);
  }

  @Test
  void anUndrainedInstanceRampsAgain() {
    view.onInstances(List.of(i("10.0.0.1:80", 1), i("10.0.0.2:80", 1)));
    view.onInstances(List.of(i("10.0.0.1:80", 1), i("10.0.0.2:80", 0)));
    assertThat(share(view.picker(), "10.0.0.2:80")).isZero();

    view.onInstances(List.of(i("10.0.0.1:80", 1), i("10.0.0.2:80", 1)));

    assertThat(share(view.picker(), "10.0.0.2:80")).isBetween(0.07, 0.11);
  }

  @Test
  void aWeightChangeOfARampingInstanceKeepsItsRampStart() {
    view.onInstances(List.of(i("10.0.0.1:80", 1)));
    view.onInstances(List.of(i("10.0.0.1:80", 1), i("10.0.0.2:80", 1)));
    now.addAndGet(WINDOW.toNanos() / 2);

    view.onInstances(List.of(i("10.0.0.1:80", 1), i("10.0.0.2:80", 2)));

    assertThat(share(view.picker(), "10.0.0.2:80")).isBetween(0.47, 0.53); // 1 (2 × 0.5) against 1
  }

  @Test
  void whenEveryInstanceIsDrainedAllAreChosenEqually() {
    view.onInstances(List.of(i("10.0.0.1:80", 0), i("10.0.0.2:80", 0)));

    assertThat(share(view.picker(), "10.0.0.2:80")).isBetween(0.47, 0.53);
    assertThat(view.picker().refreshAtNanos()).isEqualTo(InstancePicker.NEVER);
  }

  @Test
  void theListsFluxReplaysTheCurrentList() {
    view.onInstances(List.of(i("10.0.0.1:80", 3)));

    assertThat(view.lists().blockFirst(Duration.ofSeconds(1)))
        .extracting(org.springframework.cloud.client.ServiceInstance::getInstanceId)
        .containsExactly("10.0.0.1:80");
    assertThat(view.listed()).isTrue();
  }

  private static ServiceInstance i(String address, int weight) {
    return ServiceInstance.of("s", address, weight);
  }

  private static double share(InstancePicker picker, String address) {
    SplittableRandom random = new SplittableRandom(11);
    Map<String, Integer> counts = new HashMap<>();
    int n = 20_000;
    for (int k = 0; k < n; k++) {
      counts.merge(picker.pick(random.nextLong()).block().getServer().getInstanceId(), 1, Integer::sum);
    }
    return counts.getOrDefault(address, 0) / (double) n;
  }
}
