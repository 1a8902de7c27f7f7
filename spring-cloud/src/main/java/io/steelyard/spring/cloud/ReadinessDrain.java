package io.steelyard.spring.cloud;

import static java.util.Objects.requireNonNull;

import org.springframework.boot.availability.AvailabilityChangeEvent;
import org.springframework.boot.availability.ReadinessState;
import org.springframework.context.ApplicationListener;

/**
 * Keeps the HTTP registration in step with the application's readiness, the state behind the
 * actuator's {@code readiness} health group: {@link ReadinessState#REFUSING_TRAFFIC} (the group
 * reports {@code OUT_OF_SERVICE}) drains the instance, weight 0; {@link
 * ReadinessState#ACCEPTING_TRAFFIC} restores the weight it had. So a Kubernetes readiness probe
 * and the registry agree.
 */
final class ReadinessDrain implements ApplicationListener<AvailabilityChangeEvent<ReadinessState>> {

  private final SteelyardServiceRegistry registry;
  private final SteelyardAutoServiceRegistration auto;

  /** Whether the drain in force is this class's: only then does readiness undo it. */
  private boolean drained;

  ReadinessDrain(SteelyardServiceRegistry registry, SteelyardAutoServiceRegistration auto) {
    this.registry = requireNonNull(registry, "registry");
    this.auto = requireNonNull(auto, "auto");
  }

  @Override
  public synchronized void onApplicationEvent(AvailabilityChangeEvent<ReadinessState> event) {
    SteelyardRegistration r = auto.registration().orElse(null);
    if (r == null || registry.registration(r).isEmpty()) {
      return; // not registered yet, or deregistered already (shutdown)
    }
    boolean refusing = event.getState() == ReadinessState.REFUSING_TRAFFIC;
    if (refusing && !drained) {
      registry.setStatus(r, SteelyardServiceRegistry.OUT_OF_SERVICE);
      drained = true;
    } else if (!refusing && drained) {
      registry.setStatus(r, SteelyardServiceRegistry.UP);
      drained = false;
    }
  }
}
