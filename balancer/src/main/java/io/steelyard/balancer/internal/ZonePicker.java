package io.steelyard.balancer.internal;

import static com.google.common.base.Preconditions.checkArgument;

import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.PickSubchannelArgs;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.steelyard.balancer.spi.AliasTable;
import io.steelyard.balancer.spi.LoadAwarePicker;
import java.util.Arrays;
import java.util.Objects;
import java.util.Random;
import java.util.concurrent.ThreadLocalRandom;
import javax.annotation.Nullable;

/**
 * The zone step's picker ({@link ZoneRouting}): with probability {@code localShare} the local
 * zone's policy picker, else one of the other zones' pickers drawn by their spare capacity
 * (an alias table). With a {@code spillLoad} (only over a load-aware policy's pickers, given as
 * {@link LoadAwarePicker}s), a local pick whose chosen endpoint is full (its {@link
 * LoadAwarePicker#loadScore} above {@code spillLoad}) goes to a candidate of another zone instead
 * when that one ranks better by {@link LoadAwarePicker#rankScore} (for {@code
 * weighted_least_request}, load plus error cost: a remote server failing every call does not win
 * the spill by being idle).
 *
 * <p>Immutable and thread-safe; a pick draws one or two random {@code long}s and allocates
 * nothing beyond what the zone's own picker does.
 */
final class ZonePicker extends SubchannelPicker {

  /** 2^53: {@code localShare} as a threshold on 53 random bits. */
  private static final double UNIT = 0x1p53;

  private final SubchannelPicker local;
  private final SubchannelPicker[] remote;
  private final int[] remoteWeights;
  private final long[] remoteTable;
  private final double localShare;
  private final long localThreshold;
  private final double spillLoad;
  /** With a live-load spill: {@code local} and {@code remote} as load-aware pickers; else null. */
  @Nullable private final LoadAwarePicker liveLocal;
  @Nullable private final LoadAwarePicker[] liveRemote;
  @Nullable private final Random random;

  /**
   * @param remote one picker per other zone with spare capacity, parallel to {@code
   *     remoteWeights} (positive); may be empty only when {@code localShare} is 1
   * @param spillLoad 0 for no live-load spill; else {@code liveLocal} and {@code liveRemote} are
   *     {@code local} and {@code remote} as load-aware pickers
   * @param liveLocal {@code local}'s {@link LoadAwarePicker} side, or null without a live-load
   *     spill
   * @param liveRemote each {@code remote}'s {@link LoadAwarePicker} side, parallel, or null
   *     without a live-load spill
   */
  ZonePicker(
      SubchannelPicker local,
      SubchannelPicker[] remote,
      int[] remoteWeights,
      double localShare,
      double spillLoad,
      @Nullable LoadAwarePicker liveLocal,
      @Nullable LoadAwarePicker[] liveRemote,
      @Nullable Random random) {
    checkArgument(remote.length == remoteWeights.length, "remoteWeights: one per remote picker");
    checkArgument(localShare >= 0 && localShare <= 1, "localShare: %s (expected: 0..1)", localShare);
    checkArgument(remote.length > 0 || localShare == 1, "no remote zone for a share below 1");
    checkArgument(
        spillLoad == 0
            || (liveLocal != null && liveRemote != null && liveRemote.length == remote.length),
        "spillLoad %s without a load-aware picker per zone", spillLoad);
    this.local = local;
    this.remote = remote.clone();
    this.remoteWeights = remoteWeights.clone();
    this.remoteTable = remote.length == 0 ? new long[0] : AliasTable.of(this.remoteWeights);
    this.localShare = localShare;
    this.localThreshold = localShare >= 1 ? Long.MAX_VALUE : (long) (localShare * UNIT);
    this.spillLoad = remote.length == 0 ? 0 : spillLoad;
    this.liveLocal = this.spillLoad > 0 ? liveLocal : null;
    this.liveRemote = this.spillLoad > 0 ? liveRemote.clone() : null;
    this.random = random;
  }

  @Override
  public PickResult pickSubchannel(PickSubchannelArgs args) {
    if ((nextLong() >>> 11) < localThreshold) {
      if (liveLocal == null) {
        return local.pickSubchannel(args);
      }
      int chosen = liveLocal.choose();
      if (liveLocal.loadScore(chosen) > spillLoad) {
        LoadAwarePicker other = liveRemote[remoteZone()];
        int candidate = other.choose();
        if (other.rankScore(candidate) < liveLocal.rankScore(chosen)) {
          return other.pick(candidate, args);
        }
      }
      return liveLocal.pick(chosen, args);
    }
    return remote[remoteZone()].pickSubchannel(args);
  }

  private int remoteZone() {
    return remote.length == 1 ? 0 : AliasTable.sample(remoteTable, nextLong());
  }

  private long nextLong() {
    return random == null ? ThreadLocalRandom.current().nextLong() : random.nextLong();
  }

  /** The share of calls kept local by the formula (live-load spill aside). */
  double localShare() {
    return localShare;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ZonePicker that
        && Double.compare(localShare, that.localShare) == 0
        && Double.compare(spillLoad, that.spillLoad) == 0
        && Arrays.equals(remoteWeights, that.remoteWeights)
        && local.equals(that.local)
        && Arrays.equals(remote, that.remote);
  }

  @Override
  public int hashCode() {
    return Objects.hash(local, Arrays.hashCode(remoteWeights), localShare, spillLoad);
  }

  @Override
  public String toString() {
    return "ZonePicker{localShare="
        + localShare
        + ", spillLoad="
        + spillLoad
        + ", local="
        + local
        + ", remote="
        + Arrays.toString(remote)
        + ", remoteWeights="
        + Arrays.toString(remoteWeights)
        + "}";
  }
}
