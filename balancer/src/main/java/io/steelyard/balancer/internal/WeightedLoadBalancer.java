package io.steelyard.balancer.internal;

import static io.grpc.ConnectivityState.CONNECTING;
import static io.grpc.ConnectivityState.IDLE;
import static io.grpc.ConnectivityState.READY;
import static io.grpc.ConnectivityState.TRANSIENT_FAILURE;
import static java.util.Objects.requireNonNull;

import com.google.common.annotations.VisibleForTesting;
import io.grpc.ConnectivityState;
import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer;
import io.grpc.Status;
import io.grpc.util.MultiChildLoadBalancer;
import io.steelyard.balancer.EndpointWeights;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import javax.annotation.Nullable;
import javax.annotation.concurrent.NotThreadSafe;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The balancer behind both steelyard policies: one pick_first child per endpoint (grpc-java's
 * {@link MultiChildLoadBalancer}, exactly as {@code round_robin}), and a weighted picker over the
 * READY children.
 *
 * <p>Children are keyed by address only, so an update that changes nothing but weights (or other
 * attributes) reaches the existing children, whose pick_first keeps its subchannel and connection;
 * only the picker is rebuilt. A weight is read from {@link EndpointWeights#WEIGHT}; an endpoint
 * without it weighs {@value EndpointWeights#DEFAULT_WEIGHT}.
 *
 * <p>Eligible endpoints are those with a positive weight; if every endpoint has weight 0 they all
 * become eligible with equal weights (a warning is logged once on entering that state). The
 * aggregate state follows {@code round_robin} over the eligible children: any READY gives READY,
 * else any CONNECTING or IDLE gives CONNECTING, else TRANSIENT_FAILURE. A resolver error while
 * READY keeps the current picker.
 *
 * <p>Threading: like every {@link LoadBalancer}, called only from the channel's
 * SynchronizationContext; all fields are confined to it. Pickers are immutable and thread-safe.
 */
@NotThreadSafe
public final class WeightedLoadBalancer extends MultiChildLoadBalancer {

  private static final Logger logger = LoggerFactory.getLogger(WeightedLoadBalancer.class);

  private static final PickResult CONNECTING_RESULT = PickResult.withNoResult();

  /** Which picker to build over the READY endpoints. */
  public enum Policy {
    WEIGHTED_RANDOM("weighted_random"),
    WEIGHTED_ROUND_ROBIN_STATIC("weighted_round_robin_static");

    private final String policyName;

    Policy(String policyName) {
      this.policyName = policyName;
    }

    public String policyName() {
      return policyName;
    }
  }

  private final Policy policy;
  @Nullable private final Random random;
  private final AtomicLong sequence;

  /** Weight per child key, from the latest non-empty resolution. */
  private Map<Object, Integer> weightsByKey = new HashMap<>();

  private boolean allDrained;
  private SubchannelPicker currentPicker = new FixedResultPicker(CONNECTING_RESULT);

  /** Production constructor: {@link ThreadLocalRandom} for picks and the sequence's start. */
  public WeightedLoadBalancer(Helper helper, Policy policy) {
    this(helper, policy, null, ThreadLocalRandom.current().nextLong(1L << 32));
  }

  /**
   * @param random the source of weighted_random picks; null means {@link ThreadLocalRandom}
   * @param initialSequence where weighted_round_robin_static starts in its schedule
   */
  @VisibleForTesting
  public WeightedLoadBalancer(
      Helper helper, Policy policy, @Nullable Random random, long initialSequence) {
    super(helper);
    this.policy = requireNonNull(policy, "policy");
    this.random = random;
    this.sequence = new AtomicLong(initialSequence);
  }

  @Override
  protected Map<Object, ResolvedAddresses> createChildAddressesMap(
      ResolvedAddresses resolvedAddresses) {
    Map<Object, ResolvedAddresses> children = super.createChildAddressesMap(resolvedAddresses);
    if (!children.isEmpty()) {
      Map<Object, Integer> weights = new HashMap<>(children.size() * 2);
      for (Map.Entry<Object, ResolvedAddresses> entry : children.entrySet()) {
        EquivalentAddressGroup eag = entry.getValue().getAddresses().get(0);
        weights.put(entry.getKey(), EndpointWeights.weight(eag));
      }
      weightsByKey = weights;
    }
    return children;
  }

  @Override
  protected ChildLbState createChildLbState(Object key) {
    return new ChildLbState(key, pickFirstLbProvider) {
      @Override
      protected ChildLbStateHelper createChildHelper() {
        return new ChildLbStateHelper() {
          @Override
          public void updateBalancingState(ConnectivityState newState, SubchannelPicker picker) {
            super.updateBalancingState(newState, picker);
            // As round_robin: keep every endpoint connected, so weights apply at once.
            if (!resolvingAddresses && newState == IDLE) {
              getLb().requestConnection();
            }
          }
        };
      }
    };
  }

  @Override
  public void handleNameResolutionError(Status error) {
    if (currentConnectivityState != READY) {
      updateBalancingState(TRANSIENT_FAILURE, new FixedResultPicker(PickResult.withError(error)));
    }
  }

  @Override
  protected void updateOverallBalancingState() {
    List<ChildLbState> eligible = eligibleChildren();
    List<SubchannelPicker> readyPickers = new ArrayList<>(eligible.size());
    List<Integer> readyWeights = new ArrayList<>(eligible.size());
    boolean connecting = false;
    for (ChildLbState child : eligible) {
      ConnectivityState state = child.getCurrentState();
      if (state == READY) {
        readyPickers.add(child.getCurrentPicker());
        readyWeights.add(allDrained ? 1 : weightOf(child));
      } else if (state == CONNECTING || state == IDLE) {
        connecting = true;
      }
    }
    if (!readyPickers.isEmpty()) {
      SubchannelPicker[] pickers = readyPickers.toArray(new SubchannelPicker[0]);
      int[] weights = readyWeights.stream().mapToInt(Integer::intValue).toArray();
      updateBalancingState(READY, newPicker(pickers, weights));
    } else if (connecting) {
      updateBalancingState(CONNECTING, new FixedResultPicker(CONNECTING_RESULT));
    } else {
      // Every eligible child failed: round-robin over their pickers, which report their errors.
      List<SubchannelPicker> failing = new ArrayList<>(eligible.size());
      for (ChildLbState child : eligible) {
        failing.add(child.getCurrentPicker());
      }
      updateBalancingState(TRANSIENT_FAILURE, new FailingPicker(failing, sequence));
    }
  }

  private SubchannelPicker newPicker(SubchannelPicker[] pickers, int[] weights) {
    switch (policy) {
      case WEIGHTED_RANDOM:
        return new WeightedRandomPicker(pickers, weights, random);
      case WEIGHTED_ROUND_ROBIN_STATIC:
        return new SmoothRoundRobinPicker(pickers, weights, sequence);
    }
    throw new AssertionError(policy);
  }

  /**
   * Builds the READY picker {@code policy} would publish over {@code childPickers} with positive
   * {@code weights}. Exposed for the picker-rebuild benchmark only.
   */
  public static SubchannelPicker newReadyPicker(
      Policy policy, SubchannelPicker[] childPickers, int[] weights) {
    switch (policy) {
      case WEIGHTED_RANDOM:
        return new WeightedRandomPicker(childPickers, weights);
      case WEIGHTED_ROUND_ROBIN_STATIC:
        return new SmoothRoundRobinPicker(childPickers, weights, new AtomicLong());
    }
    throw new AssertionError(policy);
  }

  /** Children with a positive weight; all children when every weight is 0. */
  private List<ChildLbState> eligibleChildren() {
    List<ChildLbState> eligible = new ArrayList<>(getChildLbStates().size());
    for (ChildLbState child : getChildLbStates()) {
      if (weightOf(child) > 0) {
        eligible.add(child);
      }
    }
    boolean nowAllDrained = eligible.isEmpty() && !getChildLbStates().isEmpty();
    if (nowAllDrained && !allDrained) {
      logger.warn(
          "{}: all {} endpoints have weight 0 (drained); using them with equal weights until one"
              + " has a positive weight",
          policy.policyName(),
          getChildLbStates().size());
    }
    allDrained = nowAllDrained;
    return nowAllDrained ? new ArrayList<>(getChildLbStates()) : eligible;
  }

  private int weightOf(ChildLbState child) {
    Integer w = weightsByKey.get(child.getKey());
    return w == null ? EndpointWeights.DEFAULT_WEIGHT : w;
  }

  private void updateBalancingState(ConnectivityState state, SubchannelPicker picker) {
    if (state != currentConnectivityState || !picker.equals(currentPicker)) {
      getHelper().updateBalancingState(state, picker);
      currentConnectivityState = state;
      currentPicker = picker;
    }
  }

  /** TRANSIENT_FAILURE picker: rotates over the failed children so each one's error surfaces. */
  static final class FailingPicker extends SubchannelPicker {
    private final SubchannelPicker[] pickers;
    private final AtomicLong sequence;

    FailingPicker(List<SubchannelPicker> pickers, AtomicLong sequence) {
      this.pickers = pickers.toArray(new SubchannelPicker[0]);
      this.sequence = sequence;
    }

    @Override
    public PickResult pickSubchannel(PickSubchannelArgs args) {
      int i = (int) Math.floorMod(sequence.getAndIncrement(), (long) pickers.length);
      return pickers[i].pickSubchannel(args);
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof FailingPicker && Arrays.equals(pickers, ((FailingPicker) o).pickers);
    }

    @Override
    public int hashCode() {
      return Arrays.hashCode(pickers);
    }

    @Override
    public String toString() {
      return "FailingPicker{" + Arrays.toString(pickers) + "}";
    }
  }
}
