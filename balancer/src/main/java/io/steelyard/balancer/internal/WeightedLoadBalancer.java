package io.steelyard.balancer.internal;

import static io.grpc.ConnectivityState.CONNECTING;
import static io.grpc.ConnectivityState.IDLE;
import static io.grpc.ConnectivityState.READY;
import static io.grpc.ConnectivityState.TRANSIENT_FAILURE;
import static java.util.Objects.requireNonNull;

import com.google.common.base.Ticker;
import io.grpc.ConnectivityState;
import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer;
import io.grpc.LongCounterMetricInstrument;
import io.grpc.MetricInstrumentRegistry;
import io.grpc.Status;
import io.grpc.SynchronizationContext.ScheduledHandle;
import io.grpc.util.MultiChildLoadBalancer;
import io.steelyard.balancer.spi.BalancerObserver;
import io.steelyard.balancer.spi.ClientSubset;
import io.steelyard.balancer.spi.EffectiveWeights;
import io.steelyard.balancer.spi.EndpointState;
import io.steelyard.balancer.spi.PickerFactory;
import io.steelyard.balancer.spi.SlowStartWeights;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import io.steelyard.registry.EndpointWeights;
import io.steelyard.registry.Localities;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;
import javax.annotation.concurrent.NotThreadSafe;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The balancer behind every steelyard policy: one pick_first child per endpoint (grpc-java's
 * {@link MultiChildLoadBalancer}, exactly as {@code round_robin}), and a weighted picker over the
 * READY eligible children, built by the policy's {@link PickerFactory}.
 *
 * <p>The path from a resolution to a picker, one stage per place:
 *
 * <ol>
 *   <li>which endpoints get a child: {@link #createChildAddressesMap}, all of them, or this
 *       client's {@link ClientSubset} when the config sets {@code subsetSize} ({@link
 *       ClientSubsetting});
 *   <li>declared weight per endpoint: {@link EndpointWeights#WEIGHT}, {@value
 *       EndpointWeights#DEFAULT_WEIGHT} when absent, read in {@link #createChildAddressesMap};
 *   <li>eligibility and effective weight: {@link EffectiveWeights}, the rule integrations call
 *       too;
 *   <li>slow start, when the config turns it on: {@link SlowStart} ramps the effective weight of
 *       endpoints that recently became usable, and a timer rebuilds the picker while ramps run
 *       (at most once per {@link SlowStartWeights#refreshDelayNanos}: max(window / 20, 250 ms));
 *   <li>the panic threshold ({@link PanicThreshold}), below;
 *   <li>from the READY eligible endpoints to the picker: {@link PickerPipeline}, which owns the
 *       steps split, metadata selection, zone and the policy's pick, in that order.
 * </ol>
 *
 * <p>Children are keyed by address only, so an update that changes nothing but weights (or other
 * attributes) reaches the existing children, whose pick_first keeps its subchannel and connection;
 * only the picker is rebuilt. The aggregate state follows {@code round_robin} over the eligible
 * children: any READY gives READY, else any CONNECTING or IDLE gives CONNECTING, else
 * TRANSIENT_FAILURE. A resolver error while READY keeps the current picker.
 *
 * <p>The policy's parsed {@link WeightedPolicyConfig} arrives in {@code
 * ResolvedAddresses.getLoadBalancingPolicyConfig()} (null under {@code
 * defaultLoadBalancingPolicy}, meaning {@link WeightedPolicyConfig#DEFAULT}); its client subset
 * is read in {@link #createChildAddressesMap}, and the whole config is handed to the pipeline
 * with each READY endpoint's child key.
 *
 * <p><b>Panic</b> ({@link WeightedPolicyConfig#panicThresholdPercent()}, decided by {@link
 * PanicThreshold#panic}): when too few of the endpoints that are READY or TRANSIENT_FAILURE are
 * usable (READY and not drained), the picker also gets every child
 * whose connection still stands although it is excluded: drained ones (weight 1, as when all are
 * drained) and ones that went from READY straight to TRANSIENT_FAILURE, which is how a health
 * check's NOT_SERVING and an outlier ejection by a parent {@code outlier_detection_experimental}
 * reach a child (a lost connection goes through IDLE first, and such a child is not picked).
 * Endpoints still connecting count neither way, so a channel that is starting does not panic.
 * Each panic that begins adds 1 to the counter {@value #PANIC_METRIC}.
 *
 * <p>Threading: like every {@link LoadBalancer}, called only from the channel's
 * SynchronizationContext; all fields are confined to it. Pickers are immutable and thread-safe.
 */
@NotThreadSafe
final class WeightedLoadBalancer extends MultiChildLoadBalancer {

  private static final Logger logger = LoggerFactory.getLogger(WeightedLoadBalancer.class);

  private static final PickResult CONNECTING_RESULT = PickResult.withNoResult();

  static final String PANIC_METRIC = "steelyard.lb.panic_entries";

  private static final LongCounterMetricInstrument PANIC_ENTRIES =
      MetricInstrumentRegistry.getDefaultRegistry()
          .registerLongCounter(
              PANIC_METRIC,
              "Times a steelyard weighted balancer began picking among excluded endpoints because"
                  + " fewer than its panic threshold were usable",
              "{panic}",
              List.of("grpc.target"),
              List.of("grpc.lb.policy"),
              true);

  private final EffectiveWeights eligibility;
  private final PanicThreshold panicThreshold;
  private final SlowStart slowStart;
  private final PickerPipeline pipeline;
  /** The pending picker rebuild while ramps run, or null. */
  @Nullable private ScheduledHandle slowStartRefresh;
  private boolean shutdown;
  private final String policyName;
  private WeightedPolicyConfig config = WeightedPolicyConfig.DEFAULT;

  /** Declared weight per child key, from the latest non-empty resolution. */
  private Map<Object, Integer> declaredWeights = new HashMap<>();

  /** Backend label (first address) per child key, from the latest non-empty resolution. */
  private Map<Object, String> backends = new HashMap<>();

  /** Told about every endpoint after each update; null when the channel asked for no metrics. */
  @Nullable private final BalancerObserver observer;

  /** The last "no backend READY" report logged, so that each distinct one is logged once. */
  @Nullable private String lastNotReadyReport;

  private SubchannelPicker currentPicker = new FixedResultPicker(CONNECTING_RESULT);

  WeightedLoadBalancer(Helper helper, String policyName, PickerFactory pickerFactory) {
    this(helper, policyName, pickerFactory, Ticker.systemTicker());
  }

  /** With the clock slow start measures ramps on: the helper's scheduler's, in tests. */
  WeightedLoadBalancer(
      Helper helper, String policyName, PickerFactory pickerFactory, Ticker ticker) {
    super(helper);
    this.eligibility = new EffectiveWeights(policyName);
    this.panicThreshold = new PanicThreshold(policyName);
    this.slowStart = new SlowStart(ticker);
    this.pipeline = new PickerPipeline(policyName, requireNonNull(pickerFactory, "pickerFactory"));
    this.policyName = policyName;
    this.observer = BalancerObservers.forChannel(helper);
  }

  /**
   * The child key of the endpoint {@code eag}: equal for equal address lists, whatever the
   * attributes (grpc-util's {@code MultiChildLoadBalancer.Endpoint}).
   */
  static Object endpointKey(EquivalentAddressGroup eag) {
    return new Endpoint(eag);
  }

  @Override
  public Status acceptResolvedAddresses(ResolvedAddresses resolvedAddresses) {
    // Before super: it rebuilds the picker, which must see the new config.
    Object parsed = resolvedAddresses.getLoadBalancingPolicyConfig();
    config =
        parsed instanceof WeightedPolicyConfig
            ? (WeightedPolicyConfig) parsed
            : WeightedPolicyConfig.DEFAULT;
    pipeline.resolverZone(resolvedAddresses.getAttributes().get(Localities.CALLER_ZONE));
    return super.acceptResolvedAddresses(resolvedAddresses);
  }

  @Override
  protected Map<Object, ResolvedAddresses> createChildAddressesMap(
      ResolvedAddresses resolvedAddresses) {
    Map<Object, ResolvedAddresses> children = super.createChildAddressesMap(resolvedAddresses);
    children = ClientSubsetting.keep(children, resolvedAddresses.getLoadBalancingPolicyConfig());
    if (!children.isEmpty()) {
      Map<Object, Integer> weights = new HashMap<>(children.size() * 2);
      Map<Object, String> labels = new HashMap<>(children.size() * 2);
      Map<Object, String> zoneOf = new HashMap<>(children.size() * 2);
      Map<Object, Map<String, String>> metadataByKey = new HashMap<>();
      for (Map.Entry<Object, ResolvedAddresses> entry : children.entrySet()) {
        EquivalentAddressGroup eag = entry.getValue().getAddresses().get(0);
        weights.put(entry.getKey(), EndpointWeights.weight(eag));
        labels.put(entry.getKey(), EndpointState.label(eag.getAddresses().get(0)));
        zoneOf.put(entry.getKey(), Localities.zone(eag));
        Map<String, String> meta = eag.getAttributes().get(EndpointWeights.METADATA);
        if (meta != null) {
          metadataByKey.put(entry.getKey(), meta);
        }
      }
      declaredWeights = weights;
      backends = labels;
      pipeline.resolved(weights, zoneOf, metadataByKey);
      slowStart.onResolution(children.keySet());
    }
    return children;
  }

  @Override
  protected ChildLbState createChildLbState(Object key) {
    return new WeightedChild(key);
  }

  /** A pick_first child that remembers its READY picker while its connection stands. */
  private final class WeightedChild extends ChildLbState {
    /** The last READY picker, kept through TRANSIENT_FAILURE, dropped on IDLE or CONNECTING. */
    @Nullable private SubchannelPicker connectedPicker;

    WeightedChild(Object key) {
      super(key, pickFirstLbProvider);
    }

    @Override
    protected ChildLbStateHelper createChildHelper() {
      return new ChildLbStateHelper() {
        @Override
        public void updateBalancingState(ConnectivityState newState, SubchannelPicker picker) {
          if (newState == READY) {
            connectedPicker = picker;
          } else if (newState != TRANSIENT_FAILURE) {
            connectedPicker = null;
          }
          super.updateBalancingState(newState, picker);
          // As round_robin: keep every endpoint connected, so weights apply at once.
          if (!resolvingAddresses && newState == IDLE) {
            getLb().requestConnection();
          }
        }
      };
    }
  }

  @Override
  public void handleNameResolutionError(Status error) {
    if (currentConnectivityState != READY) {
      updateBalancingState(TRANSIENT_FAILURE, new FixedResultPicker(PickResult.withError(error)));
    }
  }

  @Override
  protected void updateOverallBalancingState() {
    List<ChildLbState> children = new ArrayList<>(getChildLbStates());
    int[] declared = new int[children.size()];
    for (int i = 0; i < declared.length; i++) {
      Integer w = declaredWeights.get(children.get(i).getKey());
      declared[i] = w == null ? EndpointWeights.DEFAULT_WEIGHT : w;
    }
    int[] effective = eligibility.compute(declared);
    Object[] keys = new Object[children.size()];
    boolean[] ready = new boolean[children.size()];
    for (int i = 0; i < keys.length; i++) {
      keys[i] = children.get(i).getKey();
      ready[i] = children.get(i).getCurrentState() == READY;
    }
    int scale = slowStart.apply(config.slowStart(), keys, ready, effective);
    scheduleSlowStartRefresh();

    List<SubchannelPicker> readyPickers = new ArrayList<>(children.size());
    Object[] readyKeys = new Object[children.size()];
    int[] readyWeights = new int[children.size()];
    List<SubchannelPicker> failing = new ArrayList<>(children.size());
    boolean connecting = false;
    int settled = 0; // children READY or TRANSIENT_FAILURE: the panic threshold's denominator
    for (int i = 0; i < children.size(); i++) {
      ConnectivityState state = children.get(i).getCurrentState();
      if (state == READY || state == TRANSIENT_FAILURE) {
        settled++;
      }
      if (effective[i] == 0) {
        continue;
      }
      ChildLbState child = children.get(i);
      if (state == READY) {
        readyWeights[readyPickers.size()] = effective[i];
        readyKeys[readyPickers.size()] = child.getKey();
        readyPickers.add(child.getCurrentPicker());
      } else if (state == CONNECTING || state == IDLE) {
        connecting = true;
      } else {
        failing.add(child.getCurrentPicker());
      }
    }
    if (observer != null || (readyPickers.isEmpty() && !failing.isEmpty())) {
      report(children, effective, scale, readyPickers.isEmpty() && !failing.isEmpty());
    }
    if (panicThreshold.panic(readyPickers.size(), settled, config.panicThresholdPercent())) {
      if (panicThreshold.panicBegan()) {
        countPanic();
      }
      readyPickers.clear();
      for (int i = 0; i < children.size(); i++) {
        WeightedChild child = (WeightedChild) children.get(i);
        SubchannelPicker picker =
            child.getCurrentState() == READY ? child.getCurrentPicker() : child.connectedPicker;
        if (picker != null) {
          readyWeights[readyPickers.size()] = Math.max(effective[i], scale);
          readyKeys[readyPickers.size()] = child.getKey();
          readyPickers.add(picker);
        }
      }
    }
    if (!readyPickers.isEmpty()) {
      lastNotReadyReport = null;
      Object[] pickKeys = Arrays.copyOf(readyKeys, readyPickers.size());
      SubchannelPicker[] pickers = readyPickers.toArray(new SubchannelPicker[0]);
      int[] pickWeights = Arrays.copyOf(readyWeights, readyPickers.size());
      updateBalancingState(READY, pipeline.picker(pickKeys, pickers, pickWeights, scale, config));
    } else if (connecting) {
      updateBalancingState(CONNECTING, new FixedResultPicker(CONNECTING_RESULT));
    } else {
      // Every eligible child failed: rotate over their pickers, which report their errors.
      updateBalancingState(TRANSIENT_FAILURE, new FailingPicker(failing));
    }
  }

  /** Keeps one rebuild pending while ramps run, none otherwise. */
  private void scheduleSlowStartRefresh() {
    if (shutdown || !slowStart.ramping()) {
      cancelSlowStartRefresh();
    } else if (slowStartRefresh == null || !slowStartRefresh.isPending()) {
      slowStartRefresh =
          getHelper()
              .getSynchronizationContext()
              .schedule(
                  () -> {
                    slowStartRefresh = null;
                    updateOverallBalancingState();
                  },
                  SlowStartWeights.refreshDelayNanos(config.slowStart()),
                  TimeUnit.NANOSECONDS,
                  getHelper().getScheduledExecutorService());
    }
  }

  private void cancelSlowStartRefresh() {
    if (slowStartRefresh != null) {
      slowStartRefresh.cancel();
      slowStartRefresh = null;
    }
  }

  @Override
  public void shutdown() {
    shutdown = true;
    cancelSlowStartRefresh();
    super.shutdown();
    if (observer != null) {
      observer.close();
    }
  }

  private void countPanic() {
    String target;
    try {
      target = getHelper().getChannelTarget();
    } catch (UnsupportedOperationException e) {
      return; // a helper outside a channel (tests, benchmarks) has no target and no metrics
    }
    getHelper().getMetricRecorder().addLongCounter(PANIC_ENTRIES, 1, List.of(target), List.of(policyName));
  }

  /**
   * Tells the observer every endpoint's state; with {@code noneReady}, also logs once per
   * distinct picture which endpoints are known and why none of them is READY (a health check
   * answering SERVICE_UNKNOWN for the service asked, a refused connection, ...).
   */
  private void report(List<ChildLbState> children, int[] effective, int scale, boolean noneReady) {
    List<EndpointState> states = new ArrayList<>(children.size());
    for (int i = 0; i < children.size(); i++) {
      ChildLbState child = children.get(i);
      ConnectivityState state = child.getCurrentState();
      states.add(new EndpointState(
          backends.getOrDefault(child.getKey(), String.valueOf(child.getKey())),
          // In the declared unit: slow start multiplies every weight by scale while ramps run.
          effective[i] == 0 ? 0 : Math.max(1, Math.round((float) effective[i] / scale)),
          state,
          state == TRANSIENT_FAILURE ? PickerSlot.failure(child.getCurrentPicker()) : null));
    }
    if (observer != null) {
      observer.update(states);
    }
    if (noneReady) {
      StringBuilder sb = new StringBuilder();
      for (EndpointState e : states) {
        sb.append(sb.length() == 0 ? "" : ", ").append(e.describe());
      }
      String report = sb.toString();
      if (!report.equals(lastNotReadyReport)) {
        lastNotReadyReport = report;
        // INFO, not WARN: this is also what a client sees for a moment when its only server
        // stops (its key already gone, its connection refused); a lasting outage shows in the
        // calls' UNAVAILABLE status, which names the same reasons.
        logger.info("{}: no backend READY ({} known, waiting for one): {}",
            getHelper().getAuthority(), states.size(), report);
      }
    }
  }

  private void updateBalancingState(ConnectivityState state, SubchannelPicker picker) {
    if (state != currentConnectivityState || !picker.equals(currentPicker)) {
      getHelper().updateBalancingState(state, picker);
      currentConnectivityState = state;
      currentPicker = picker;
    }
  }
}
