package io.steelyard.console;

import static java.util.Objects.requireNonNull;

import io.steelyard.registry.EtcdFailureText;
import io.steelyard.registry.Validation;
import io.steelyard.registry.admin.InstanceStore;
import io.steelyard.registry.admin.InstanceWrite;
import java.time.Clock;
import java.util.Locale;
import javax.annotation.Nullable;

/**
 * The console's writes: {@code weight set}, {@code drain}, {@code undrain} and {@code deregister}
 * exactly as the CLI runs them: the same {@link InstanceWrite} (its input checks and messages
 * before etcd is contacted), carried out by the same {@link InstanceStore#apply} (a rewrite
 * guarded by the mod revision, keeping lease and format), the same one-line outcome. Every attempt, refused or not, goes to the {@link
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
  private final String etcdEndpoints; // named in failure texts
  private final EventLog log;
  private final Clock clock;

  Actions(InstanceStore store, String etcdEndpoints, EventLog log, Clock clock) {
    this.store = requireNonNull(store, "store");
    this.etcdEndpoints = requireNonNull(etcdEndpoints, "etcdEndpoints");
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
      outcome = new Outcome(false, 400, EtcdFailureText.oneLine(badInput.getMessage()));
    } catch (RuntimeException failed) {
      outcome = new Outcome(false, 409, EtcdFailureText.describe(failed, etcdEndpoints));
    }
    log.add(new EventLog.Event(clock.instant(), who, request.action(),
        String.valueOf(request.service()), String.valueOf(request.address()), outcome.ok(),
        outcome.message()));
    return outcome;
  }

  private String perform(Request r) {
    String action = r.action() == null ? "" : r.action().toLowerCase(Locale.ROOT);
    // Every input is checked (by InstanceWrite, as for the CLI) before etcd is contacted: bad
    // input writes nothing.
    InstanceWrite write;
    switch (action) {
      case "weight":
        write = InstanceWrite.setWeight(r.service(), r.address(), weight(r.weight()));
        break;
      case "drain":
        write = InstanceWrite.drain(r.service(), r.address());
        break;
      case "undrain":
        write =
            r.weight() == null || r.weight().isBlank()
                ? InstanceWrite.undrain(r.service(), r.address())
                : InstanceWrite.undrain(r.service(), r.address(), weight(r.weight()));
        break;
      case "deregister":
        write = InstanceWrite.deregister(r.service(), r.address());
        break;
      default:
        throw new IllegalArgumentException(
            "action: " + Validation.quote(r.action())
                + " (expected: weight, drain, undrain or deregister)");
    }
    return store.apply(write).message();
  }

  /**
   * The weight as typed. Text that is no number is refused in the words of the range check, which
   * {@link InstanceWrite} then applies to a number as it does for the CLI.
   */
  static long weight(@Nullable String typed) {
    String t = typed == null ? "" : typed.strip();
    try {
      return Long.parseLong(t);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "weight: " + Validation.quote(t) + " (expected: 0.." + Validation.MAX_WEIGHT + ")");
    }
  }
}
