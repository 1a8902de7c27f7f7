package io.steelyard.agent;

import static java.util.Objects.requireNonNull;

import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.protobuf.services.HealthStatusManager;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import javax.annotation.Nullable;

/**
 * Keeps a grpc-java {@link HealthStatusManager} in step with a {@link ServiceRegistration}: the
 * overall status ({@code ""}), the registration's service name and any other names given are
 * SERVING while the registration is REGISTERED or RECOVERING (etcd trouble does not make the
 * server any less able to serve), and NOT_SERVING before the first registration, after an
 * operator deleted the key, and for good from {@link #enterTerminalState()} on; REFUSED keeps
 * the status it found. Used by {@link RegisteredServer} and by the Spring Boot starter, which
 * owns the server's lifecycle itself.
 *
 * <pre>{@code
 * RegistrationHealth h = RegistrationHealth.follow(health, registration, List.of("helloworld.Greeter"));
 * ...
 * h.enterTerminalState();   // first step of a graceful shutdown: clients stop picking this server
 * registration.close();
 * }</pre>
 *
 * <p>Threading: the status follows the registration through a {@link RegistrationListener}, on
 * the registration's thread ({@code HealthStatusManager.setStatus} does not block it); {@link
 * #enterTerminalState()} may be called from any thread, and no status is set after it returns.
 */
public final class RegistrationHealth {

  private final HealthStatusManager health;
  private final List<String> names;
  private final Object lock = new Object();
  private boolean terminal; // guarded by lock

  private RegistrationHealth(HealthStatusManager health, List<String> names) {
    this.health = health;
    this.names = names;
  }

  /**
   * Sets every name NOT_SERVING now, then follows {@code registration}'s state (attach before
   * {@link ServiceRegistration#start()}, or the listener's first call brings it up to date).
   */
  public static RegistrationHealth follow(
      HealthStatusManager health, ServiceRegistration registration, Collection<String> moreNames) {
    requireNonNull(health, "health");
    requireNonNull(registration, "registration");
    Set<String> names = new LinkedHashSet<>();
    names.add(HealthStatusManager.SERVICE_NAME_ALL_SERVICES);
    names.add(registration.service());
    for (String n : moreNames) {
      names.add(requireNonNull(n, "name"));
    }
    RegistrationHealth h = new RegistrationHealth(health, List.copyOf(names));
    h.set(ServingStatus.NOT_SERVING);
    registration.addListener(h::onState);
    return h;
  }

  /** The health service names this follower sets, {@code ""} first. */
  public List<String> names() {
    return names;
  }

  private void onState(RegistrationState state) {
    ServingStatus status = servingStatus(state);
    if (status != null) {
      set(status);
    }
  }

  /**
   * The health status a registration in {@code state} stands for, or null to keep the current
   * one: REFUSED (etcd said no) leaves NOT_SERVING before the first registration and SERVING
   * after a lost lease, as RECOVERING does (etcd trouble does not make the server less able to
   * serve).
   */
  @Nullable
  static ServingStatus servingStatus(RegistrationState state) {
    return switch (state) {
      case REGISTERED, RECOVERING -> ServingStatus.SERVING;
      case NEW, REGISTERING, DELETED_BY_OPERATOR, CLOSED -> ServingStatus.NOT_SERVING;
      case REFUSED -> null;
    };
  }

  private void set(ServingStatus status) {
    synchronized (lock) {
      if (terminal) {
        return;
      }
      for (String name : names) {
        health.setStatus(name, status);
      }
    }
  }

  /**
   * Every service NOT_SERVING for good ({@link HealthStatusManager#enterTerminalState()}): later
   * registration changes no longer touch the health service. Idempotent.
   */
  public void enterTerminalState() {
    synchronized (lock) {
      terminal = true;
      health.enterTerminalState();
    }
  }
}
