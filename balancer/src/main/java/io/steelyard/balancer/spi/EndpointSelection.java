package io.steelyard.balancer.spi;

import static com.google.common.base.Preconditions.checkArgument;
import static java.util.Objects.requireNonNull;

import com.google.common.collect.ImmutableList;
import com.google.common.collect.ImmutableSortedMap;
import java.math.BigDecimal;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import javax.annotation.Nullable;
import javax.annotation.concurrent.Immutable;

/**
 * Metadata selection: which endpoints a weighted policy picks from, chosen by their metadata
 * (the {@code Metadata} of the registry's JSON value, e.g. {@code version=v2}). The {@value
 * #FIELD_SUBSET} and {@value #FIELD_SPLIT} options every weighted policy accepts configure it, in
 * the spirit of Envoy's subset load balancer and Dubbo's tag routing. The policy's weights then
 * apply inside the chosen endpoints, the <em>selection</em>.
 *
 * <p>The {@value #FIELD_SUBSET} option selects the READY endpoints that match a selector; when
 * none matches, its {@value #FIELD_FALLBACK} decides: {@value #FALLBACK_ANY} (the default) picks
 * among every READY endpoint, {@value #FALLBACK_NONE} fails calls with {@code UNAVAILABLE}, and
 * another {@code {"selector": ...}} is tried next (with a fallback of its own):
 *
 * <pre>{@code
 * {"weighted_random": {"subset": {"selector": {"version": "v2"},
 *                                 "fallback": {"selector": {"version": "v1"}, "fallback": "none"}}}}
 * }</pre>
 *
 * <p>The {@value #FIELD_SPLIT} option sends each call to one of several selections (the
 * endpoints of each selector), chosen at random with the given percentages (resolution 0.01,
 * summing to 100); a selection without a READY endpoint gives its share to the others in
 * proportion to theirs (to all of them evenly when theirs are all 0), and when no selection has
 * one, calls go to every READY endpoint. Endpoints no selector matches take no calls while any
 * selection has a READY endpoint.
 *
 * <pre>{@code
 * {"weighted_random": {"split": [{"selector": {"version": "v1"}, "percent": 90},
 *                                {"selector": {"version": "v2"}, "percent": 10}]}}
 * }</pre>
 *
 * <p>A selector matches an endpoint whose metadata holds every one of the selector's labels with
 * exactly that value (other labels are ignored); it has at least one label. Immutable.
 */
@Immutable
public final class EndpointSelection {

  /** The option: one selector with its fallbacks. */
  public static final String FIELD_SUBSET = "subset";

  /** The option: a traffic split across selections. */
  public static final String FIELD_SPLIT = "split";

  /** A {@code subset}'s or split entry's labels: an object of strings. */
  public static final String FIELD_SELECTOR = "selector";

  /** What a {@code subset} does when its selector matches no READY endpoint. */
  public static final String FIELD_FALLBACK = "fallback";

  /** A split entry's share of the calls, 0..100. */
  public static final String FIELD_PERCENT = "percent";

  /** Fallback: pick among every READY endpoint (the default). */
  public static final String FALLBACK_ANY = "any";

  /** Fallback: fail the call with {@code UNAVAILABLE}, naming the selectors. */
  public static final String FALLBACK_NONE = "none";

  /** Most selectors in one option (a {@code subset}'s fallback chain, a split's entries). */
  public static final int MAX_SELECTORS = 8;

  /** A split's percentages are counted in hundredths of a percent, summing to this. */
  public static final int TOTAL_BASIS_POINTS = 10_000;

  private final ImmutableList<Map<String, String>> selectors;
  private final boolean fallbackToAny;
  @Nullable private final int[] basisPoints;

  private EndpointSelection(
      List<Map<String, String>> selectors, boolean fallbackToAny, @Nullable int[] basisPoints) {
    checkArgument(
        !selectors.isEmpty() && selectors.size() <= MAX_SELECTORS,
        "selectors: %s (expected: 1..%s)",
        selectors.size(),
        MAX_SELECTORS);
    ImmutableList.Builder<Map<String, String>> copies = ImmutableList.builder();
    for (Map<String, String> selector : selectors) {
      checkArgument(!selector.isEmpty(), "selector: {} (expected: at least one label)");
      copies.add(ImmutableSortedMap.copyOf(selector));
    }
    this.selectors = copies.build();
    this.fallbackToAny = fallbackToAny;
    this.basisPoints = basisPoints;
  }

  /**
   * A {@code subset} option: the endpoints matching the first of {@code selectors} that matches
   * a READY one; when none does, every READY endpoint if {@code fallbackToAny}, else calls fail.
   */
  public static EndpointSelection select(List<Map<String, String>> selectors, boolean fallbackToAny) {
    return new EndpointSelection(selectors, fallbackToAny, null);
  }

  /**
   * A split: entry {@code i} (the endpoints matching {@code selectors.get(i)}) takes {@code
   * basisPoints[i]} hundredths of a percent of the calls; the basis points sum to {@value
   * #TOTAL_BASIS_POINTS}.
   */
  public static EndpointSelection split(List<Map<String, String>> selectors, int[] basisPoints) {
    requireNonNull(basisPoints, "basisPoints");
    checkArgument(
        basisPoints.length == selectors.size(),
        "basisPoints: %s entries (expected: %s, one per selector)",
        basisPoints.length,
        selectors.size());
    long sum = 0;
    for (int bp : basisPoints) {
      checkArgument(bp >= 0, "basisPoints: %s (expected: >= 0)", bp);
      sum += bp;
    }
    checkArgument(sum == TOTAL_BASIS_POINTS, "basisPoints: sum %s (expected: %s)", sum, TOTAL_BASIS_POINTS);
    return new EndpointSelection(selectors, false, basisPoints.clone());
  }

  /** Whether this is a {@code split} (else a {@code subset}). */
  public boolean isSplit() {
    return basisPoints != null;
  }

  /** A {@code subset}'s selectors in the order tried, or a split's, one per entry. */
  public List<Map<String, String>> selectors() {
    return selectors;
  }

  /** A {@code subset}'s last resort: true for {@value #FALLBACK_ANY}, false for {@value #FALLBACK_NONE}. */
  public boolean fallbackToAny() {
    return fallbackToAny;
  }

  /** A split entry's share in hundredths of a percent; 0 for a {@code subset}. */
  public int basisPoints(int entry) {
    return basisPoints == null ? 0 : basisPoints[entry];
  }

  /** Whether an endpoint with {@code metadata} (null: none) has every label of {@code selector}. */
  public static boolean matches(Map<String, String> selector, @Nullable Map<String, String> metadata) {
    if (metadata == null) {
      return selector.isEmpty();
    }
    for (Map.Entry<String, String> label : selector.entrySet()) {
      if (!label.getValue().equals(metadata.get(label.getKey()))) {
        return false;
      }
    }
    return true;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof EndpointSelection that
        && selectors.equals(that.selectors)
        && fallbackToAny == that.fallbackToAny
        && Arrays.equals(basisPoints, that.basisPoints);
  }

  @Override
  public int hashCode() {
    return Objects.hash(selectors, fallbackToAny, Arrays.hashCode(basisPoints));
  }

  /** {@code split[{version=v1} 90%, {version=v2} 10%]} or {@code subset[{version=v2} else any]}. */
  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder(isSplit() ? "split[" : "subset[");
    for (int i = 0; i < selectors.size(); i++) {
      sb.append(i == 0 ? "" : isSplit() ? ", " : " else ").append(selectors.get(i));
      if (basisPoints != null) {
        sb.append(' ').append(percentText(basisPoints[i])).append('%');
      }
    }
    if (!isSplit()) {
      sb.append(" else ").append(fallbackToAny ? FALLBACK_ANY : FALLBACK_NONE);
    }
    return sb.append(']').toString();
  }

  /** {@code 1250} as {@code "12.5"}: a share in basis points as the percent users write. */
  private static String percentText(int basisPoints) {
    return BigDecimal.valueOf(basisPoints, 2).stripTrailingZeros().toPlainString();
  }
}
