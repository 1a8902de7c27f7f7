package io.steelyard.console;

import static java.util.Objects.requireNonNull;

import io.steelyard.registry.Validation;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import javax.annotation.Nullable;

/**
 * The open service pages: one per service a browser looks at, opened on first look, refreshed every
 * tick, closed (with its watch) once no page has looked for {@link #IDLE}. At most {@value #MAX}
 * at a time, so a client walking made-up service names cannot open unbounded watches.
 *
 * <p>Threading: thread-safe.
 */
final class ServicePages implements AutoCloseable {

  static final int MAX = 256;
  static final Duration IDLE = Duration.ofSeconds(60);

  private final Function<String, ServicePage> open;
  private final Map<String, ServicePage> views = new ConcurrentHashMap<>();
  private volatile boolean closed;

  ServicePages(Function<String, ServicePage> open) {
    this.open = requireNonNull(open, "open");
  }

  /**
   * The view of {@code service}, opened if needed; null when too many are open.
   *
   * @throws IllegalArgumentException when {@code service} is not a service name
   */
  @Nullable
  ServicePage get(String service) {
    Validation.checkServiceName(service);
    if (closed) {
      return null;
    }
    ServicePage v = views.get(service);
    if (v == null) {
      if (views.size() >= MAX) {
        return null;
      }
      v = views.computeIfAbsent(service, open);
    }
    v.viewed();
    return v;
  }

  /** Refreshes every view a page looked at lately; closes the others. */
  void tick() {
    for (ServicePage v : views.values()) {
      if (v.idleFor(IDLE)) {
        views.remove(v.service(), v);
        v.close();
      } else {
        v.refresh();
      }
    }
  }

  @Override
  public void close() {
    closed = true;
    views.values().forEach(ServicePage::close);
    views.clear();
  }
}
