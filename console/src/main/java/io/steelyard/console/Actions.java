package io.steelyard.console;

import static java.util.Objects.requireNonNull;

import io.steelyard.agent.InstanceStore;
import io.steelyard.agent.RegisteredInstance;
import io.steelyard.registry.Validation;
import java.time.Clock;
import java.util.Locale;
import java.util.OptionalInt;
import javax.annotation.Nullable;

/**
 * The console's writes: {@code weight set}, {@code drain}, {@code undrain} and {@code deregister}
 * exactly as the CLI runs them — the same input checks (and messages) before etcd is contacted,
 * the same {@link InstanceStore} calls (read, then a rewrite guarded by the mod revision, keeping
 * lease and format), the same one-line outcome. Every attempt, refused or not, goes to the {@link
 * EventLog}.
 *
 * <p>Threading: thread-safe; each call blocks its caller for at most the store's timeout per etcd
 * call.
 */
final class Actions {

  /** What the page asked for. {@code weight} is the text typed, null when not given. */
  record Request(String action, String service, String address, @Nullable String weight) {}

  /** How it ended: {@code ok}, or refused with {@code status} (400 bad input, 409 etcd said no). */
  record Outcome(boolean ok, int status, String message) {}

  private final InstanceStore store;
  private final EtcdErrors errors;
  private final EventLog log;
  private final Clock clock;

  Actions(InstanceStore store, EtcdErrors errors, EventLog log, Clock clock) {
    this.store = requireNonNull(store, "store");
    this.errors = requireNonNull(errors, "errors");
    this.log = requireNonNull(log, "log");
    this.clock = requireNonNull(clock, "clock");
  }

  EventLog log() {
    return log;
  }

  Outcome run(Request request, String who) {
    Outcome outcome;
    try {
      outcome = new Outcome(true, 200, perform(request));
    } catch (IllegalArgumentException badInput) {
      outcome = new Outcome(false, 400, EtcdErrors.oneLine(badInput.getMessage()));
    } catch (RuntimeException failed) {
      outcome = new Outcome(false, 409, errors.describe(failed));
    }
    log.add(new EventLog.Event(clock.instant(), who, request.action(),
        String.valueOf(request.service()), String.valueOf(request.address()), outcome.ok(),
        outcome.message()));
    return outcome;
  }

  private String perform(Request r) {
    String action = r.action() == null ? "" : r.action().toLowerCase(Locale.ROOT);
    // Every input is checked before etcd is contacted, as the CLI does: bad input writes nothing.
    switch (action) {
      case "weight":
        return setWeight(checkInstance(r), r.address(), weight(r.weight()));
      case "drain":
        return drain(checkInstance(r), r.address());
      case "undrain":
        return undrain(checkInstance(r), r.address(),
            r.weight() == null || r.weight().isBlank()
                ? OptionalInt.empty() : OptionalInt.of(weight(r.weight())));
      case "deregister":
        return deregister(checkInstance(r), r.address());
      default:
        throw new IllegalArgumentException(
            "action: " + Validation.quote(r.action())
                + " (expected: weight, drain, undrain or deregister)");
    }
  }

  private static String checkInstance(Request r) {
    Validation.checkServiceName(r.service());
    Validation.checkAddress(r.address());
    return r.service();
  }

  /** The weight as typed; out of range is refused with the CLI's message. */
  static int weight(@Nullable String typed) {
    String t = typed == null ? "" : typed.strip();
    long w;
    try {
      w = Long.parseLong(t);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "weight: " + Validation.quote(t) + " (expected: 0.." + Validation.MAX_WEIGHT + ")");
    }
    return Validation.checkWeight(w);
  }

  private String setWeight(String service, String address, int w) {
    RegisteredInstance before = store.require(service, address);
    int old = before.acceptedOrThrow().weight();
    store.setWeight(before, w);
    return address + " weight " + old + " -> " + w;
  }

  private String drain(String service, String address) {
    RegisteredInstance current = store.require(service, address);
    int before = current.acceptedOrThrow().weight();
    RegisteredInstance after = store.drain(current);
    if (before != 0 && after.drainedFromWeight() >= 0) {
      return address + " drained: weight " + after.drainedFromWeight() + " -> 0"
          + " (undrain restores " + after.drainedFromWeight() + ")";
    }
    return address + " was already drained (weight 0"
        + (after.drainedFromWeight() >= 0 ? "; undrain restores " + after.drainedFromWeight() : "")
        + ")";
  }

  private String undrain(String service, String address, OptionalInt w) {
    RegisteredInstance before = store.require(service, address);
    int old = before.acceptedOrThrow().weight();
    RegisteredInstance after = store.undrain(before, w);
    int now = after.acceptedOrThrow().weight();
    if (old != 0 && w.isEmpty()) {
      return address + " is not drained (weight " + old + "); nothing changed";
    }
    return address + " weight " + old + " -> " + now;
  }

  private String deregister(String service, String address) {
    String key = store.layout().instanceKey(service, address);
    if (!store.delete(service, address)) {
      throw store.notRegistered(service, address);
    }
    return "deleted " + key;
  }
}
