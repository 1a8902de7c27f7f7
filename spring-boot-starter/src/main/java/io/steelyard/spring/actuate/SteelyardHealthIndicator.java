package io.steelyard.spring.actuate;

import io.steelyard.agent.RegistrationState;
import io.steelyard.agent.ServiceRegistration;
import io.steelyard.discovery.DiscoveryStats;
import io.steelyard.spring.GrpcServerRegistration;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.annotation.Nullable;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;

/**
 * The {@code steelyard} health contributor: this application's registration and the process's
 * discovery watches.
 *
 * <p>Status: DOWN while this application's key is not in etcd under a live lease (before the
 * first registration, while recovering a lost lease, while etcd refuses it for permission,
 * credentials or TLS (the detail {@code refusal} quotes etcd's reason), after an operator deleted
 * it, from shutdown on), UP otherwise; a drained instance (weight 0) is UP. UNKNOWN when the
 * application registers nothing (registration disabled shows no registration detail, and is UP).
 * Discovery staleness (etcd unreachable, channels served from the last known list) shows in the
 * details and does not change the status: the channels keep working. Keep {@code steelyard} out
 * of liveness probes, or an etcd outage restarts every instance.
 */
public final class SteelyardHealthIndicator implements HealthIndicator {

  @Nullable private final GrpcServerRegistration registration;

  public SteelyardHealthIndicator(@Nullable GrpcServerRegistration registration) {
    this.registration = registration;
  }

  @Override
  public Health health() {
    Health.Builder health = Health.up();
    if (registration != null) {
      ServiceRegistration reg = registration.registration().orElse(null);
      Map<String, Object> details = new LinkedHashMap<>();
      details.put("service", registration.service());
      if (reg == null) {
        health = Health.unknown();
        details.put("state", "no network gRPC server to register");
      } else {
        RegistrationState state = reg.state();
        details.put("address", reg.address());
        details.put("key", reg.key());
        details.put("state", state.name());
        details.put("weight", reg.weight());
        details.put("leaseId", reg.leaseId());
        details.put("registrations", registration.registrations());
        reg.refusal().ifPresent(e -> details.put("refusal", e.getMessage()));
        if (state != RegistrationState.REGISTERED) {
          health = Health.down();
        }
      }
      health.withDetail("registration", details);
    }
    Map<String, Object> discovery = new LinkedHashMap<>();
    discovery.put("watches", DiscoveryStats.activeWatches());
    discovery.put("staleWatches", DiscoveryStats.staleWatches());
    discovery.put("maxStalenessMillis", DiscoveryStats.maxStaleness().toMillis());
    discovery.put("malformedValues", DiscoveryStats.malformedValues());
    return health.withDetail("discovery", discovery).build();
  }
}
