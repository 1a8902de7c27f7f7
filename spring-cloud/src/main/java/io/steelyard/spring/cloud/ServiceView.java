package io.steelyard.spring.cloud;

import static java.util.Objects.requireNonNull;

import com.google.common.annotations.VisibleForTesting;
import io.steelyard.balancer.spi.EffectiveWeights;
import io.steelyard.balancer.spi.SlowStartConfig;
import io.steelyard.balancer.spi.SlowStartWeights;
import io.steelyard.discovery.ServiceWatcher;
import io.steelyard.discovery.Snapshot;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.cloud.client.ServiceInstance;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * One service as this application sees it, live from a {@link ServiceWatcher}: the current
 * instance list, a weighted {@link InstancePicker} over it, and a {@link Flux} of every new list.
 * The weights are the balancer's rules: eligibility by {@link EffectiveWeights} (drain, and
 * every instance drained) and slow start by {@link SlowStartWeights}. When a ramp begins is this
 * class's rule: an instance that appears after the first list, or whose weight goes from 0 to
 * positive (an undrain), ramps from that moment.
 *
 * <p>Threading: {@link #onSnapshot} runs on the discovery thread, one call at a time; readers
 * ({@link #picker()}, {@link #instances()}, {@link #lists()}) run on any thread and never block.
 */
final class ServiceView implements ServiceWatcher.Listener {

  private static final Logger logger = LoggerFactory.getLogger(ServiceView.class);

  private final String service;
  @Nullable private final SlowStartConfig slowStart;
  private final LongSupplier nanoTime;
  private final CompletableFuture<Void> firstList = new CompletableFuture<>();
  private final Sinks.Many<List<ServiceInstance>> lists = Sinks.many().replay().latest();
  private final AtomicReference<State> state = new AtomicReference<>(new State(InstancePicker.empty(), new int[0], new long[0]));

  /** Discovery thread only: when each address's ramp began; absent when it is not usable. */
  private final Map<String, Long> rampStarts = new HashMap<>();

  /** Discovery thread only. */
  private boolean listed;

  /** Discovery thread only: logs once when every instance becomes drained. */
  private final EffectiveWeights eligibility;

  /** What a rebuild for a moving ramp needs: the picker and what it was made of. */
  private record State(InstancePicker picker, int[] effective, long[] rampStartNanos) {}

  ServiceView(String service, @Nullable SlowStartConfig slowStart, LongSupplier nanoTime) {
    this.service = requireNonNull(service, "service");
    this.eligibility = new EffectiveWeights(service);
    this.slowStart = slowStart;
    this.nanoTime = requireNonNull(nanoTime, "nanoTime");
  }

  @Override
  public void onSnapshot(Snapshot snapshot) {
    onInstances(snapshot.instances());
  }

  /** A new complete list of the service (what {@link #onSnapshot} hands on). */
  @VisibleForTesting
  void onInstances(List<io.steelyard.registry.ServiceInstance> registered) {
    long now = nanoTime.getAsLong();
    int n = registered.size();
    List<ServiceInstance> instances = new ArrayList<>(n);
    int[] weights = new int[n];
    long[] starts = new long[n];
    Map<String, Long> next = new HashMap<>();
    for (int i = 0; i < n; i++) {
      io.steelyard.registry.ServiceInstance r = registered.get(i);
      instances.add(new SteelyardServiceInstance(r));
      weights[i] = r.weight();
      starts[i] = SlowStartWeights.NOT_RAMPING;
      if (r.weight() > 0) {
        Long start = rampStarts.get(r.address());
        if (start == null) {
          // Serving before this application listed the service: no ramp (a restarted client
          // must not starve the servers it finds).
          start = listed ? now : SlowStartWeights.NOT_RAMPING;
        }
        next.put(r.address(), start);
        starts[i] = start;
      }
    }
    rampStarts.clear();
    rampStarts.putAll(next);
    listed = true;
    int[] effective = eligibility.compute(weights);
    List<ServiceInstance> list = Collections.unmodifiableList(instances);
    state.set(new State(InstancePicker.of(list, effective, starts, slowStart, now), effective, starts));
    lists.tryEmitNext(list);
    firstList.complete(null);
  }

  @Override
  public void onUnavailable(Throwable cause) {
    logger.warn("{}: no instance list from etcd yet, retrying: {}", service, cause.getMessage());
  }

  /** The picker for now: rebuilt here when a ramp has moved on since it was made. */
  InstancePicker picker() {
    State s = state.get();
    if (s.picker.refreshAtNanos() != InstancePicker.NEVER) {
      long now = nanoTime.getAsLong();
      if (now >= s.picker.refreshAtNanos()) {
        State fresh = new State(
            InstancePicker.of(s.picker.instances(), s.effective, s.rampStartNanos, slowStart, now),
            s.effective, s.rampStartNanos);
        // Never over a newer list the discovery thread published meanwhile.
        state.compareAndSet(s, fresh);
        return fresh.picker;
      }
    }
    return s.picker;
  }

  /** The current list (drained instances included), empty before the first list. */
  List<ServiceInstance> instances() {
    return state.get().picker.instances();
  }

  /** Whether the first list from etcd has arrived. */
  boolean listed() {
    return firstList.isDone();
  }

  /** The current list, waiting up to {@code timeout} for the first one; empty when it did not come. */
  List<ServiceInstance> awaitInstances(Duration timeout) {
    try {
      firstList.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      logger.warn("{}: no instance list from etcd within {} ms; answering an empty list",
          service, timeout.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException e) {
      throw new IllegalStateException(e);
    }
    return instances();
  }

  /** Completes with the current list once the first one has arrived. */
  Mono<List<ServiceInstance>> firstInstances() {
    return Mono.fromFuture(firstList.copy()).then(Mono.fromSupplier(this::instances));
  }

  /** The current list, then every new one, as the watch delivers them. */
  Flux<List<ServiceInstance>> lists() {
    return lists.asFlux();
  }

  String service() {
    return service;
  }
}
