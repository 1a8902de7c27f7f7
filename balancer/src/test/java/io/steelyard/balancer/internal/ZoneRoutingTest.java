package io.steelyard.balancer.internal;

import static io.steelyard.balancer.internal.TestPickers.childPickers;
import static io.steelyard.balancer.internal.TestPickers.indexOf;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.grpc.LoadBalancer.PickSubchannelArgs;
import io.grpc.Status;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.steelyard.balancer.spi.PickerFactory;
import io.steelyard.balancer.spi.TracerDecorator;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import io.steelyard.balancer.spi.ZoneRoutingConfig;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * The zone step's formula, run by the pipeline: local share, spill by spare capacity, panic, live
 * load, recovery.
 */
class ZoneRoutingTest {

  private static final int PICKS = 40_000;

  private final Random random = new Random(42);
  private final PickerFactory weightedRandom = WeightedRandomPicker.newFactory(new Random(7));

  /** Six endpoints: 0..2 in zone a (weights 1, 2, 3), 3..5 in zone b (1, 2, 3). */
  private static final String[] ZONES = {"a", "a", "a", "b", "b", "b"};

  private static final int[] WEIGHTS = {1, 2, 3, 1, 2, 3};

  private final SubchannelPicker[] children = childPickers(ZONES.length);

  private static WeightedPolicyConfig config(ZoneRoutingConfig zoneRouting) {
    return WeightedPolicyConfig.builder().zoneRouting(zoneRouting).build();
  }

  private static WeightedPolicyConfig inZone(String zone) {
    return config(ZoneRoutingConfig.builder().zone(zone).build());
  }

  private PickerPipeline pipeline(PickerFactory factory) {
    return new PickerPipeline(factory == weightedRandom ? "weighted_random" : "weighted_least_request",
        factory, random);
  }

  /**
   * The pipeline's picker when every endpoint {@code keys[i]} has a child, in zone {@code
   * zones[i]} with declared weight {@code declared[i]} and picker {@code children[i]}, and those
   * at the indexes {@code ready} are READY with their declared weight.
   */
  private static SubchannelPicker picker(
      PickerPipeline pipeline,
      WeightedPolicyConfig config,
      Object[] keys,
      String[] zones,
      int[] declared,
      SubchannelPicker[] children,
      int... ready) {
    Map<Object, Integer> declaredByKey = new HashMap<>();
    Map<Object, String> zoneByKey = new HashMap<>();
    for (int i = 0; i < keys.length; i++) {
      declaredByKey.put(keys[i], declared[i]);
      zoneByKey.put(keys[i], zones[i]);
    }
    pipeline.resolved(declaredByKey, zoneByKey, Map.of());
    Object[] readyKeys = new Object[ready.length];
    SubchannelPicker[] pickers = new SubchannelPicker[ready.length];
    int[] weights = new int[ready.length];
    for (int i = 0; i < ready.length; i++) {
      readyKeys[i] = keys[ready[i]];
      pickers[i] = children[ready[i]];
      weights[i] = declared[ready[i]];
    }
    return pipeline.picker(readyKeys, pickers, weights, 1, config);
  }

  /** The picker over the READY endpoints among {@code ready} (indexes into ZONES/WEIGHTS). */
  private SubchannelPicker picker(
      PickerPipeline pipeline, WeightedPolicyConfig config, int... ready) {
    Object[] keys = new Object[ZONES.length];
    for (int i = 0; i < keys.length; i++) {
      keys[i] = "endpoint-" + i;
    }
    return picker(pipeline, config, keys, ZONES, WEIGHTS, children, ready);
  }

  private static int[] counts(SubchannelPicker picker) {
    int[] counts = new int[ZONES.length];
    PickSubchannelArgs args = null; // fixed-result children ignore the args
    for (int i = 0; i < PICKS; i++) {
      counts[indexOf(picker.pickSubchannel(args))]++;
    }
    return counts;
  }

  private static double zoneShare(int[] counts, String zone) {
    int in = 0;
    for (int i = 0; i < counts.length; i++) {
      in += ZONES[i].equals(zone) ? counts[i] : 0;
    }
    return (double) in / PICKS;
  }

  @Test
  void withoutCallerZoneTheStepStepsAside() {
    PickerPipeline pipeline = pipeline(weightedRandom);

    assertThat(picker(pipeline, WeightedPolicyConfig.DEFAULT, 0, 1, 2, 3, 4, 5))
        .isEqualTo(weightedRandom.newPicker(children, WEIGHTS));
  }

  @Test
  void disabledIgnoresTheResolversZone() {
    PickerPipeline pipeline = pipeline(weightedRandom);
    pipeline.resolverZone("a");
    WeightedPolicyConfig off = config(ZoneRoutingConfig.builder().enabled(false).build());

    assertThat(picker(pipeline, off, 0, 1, 2, 3, 4, 5))
        .isEqualTo(weightedRandom.newPicker(children, WEIGHTS));
  }

  @Test
  void theResolversZoneAppliesWhenTheConfigNamesNone() {
    PickerPipeline pipeline = pipeline(weightedRandom);
    pipeline.resolverZone("b");

    int[] counts =
        counts(picker(pipeline, WeightedPolicyConfig.DEFAULT, 0, 1, 2, 3, 4, 5));

    assertThat(zoneShare(counts, "b")).isEqualTo(1.0);
  }

  @Test
  void aZoneWhoseCapacityCarriesItsShareKeepsEveryCallByWeight() {
    PickerPipeline pipeline = pipeline(weightedRandom);

    int[] counts = counts(picker(pipeline, inZone("a"), 0, 1, 2, 3, 4, 5));

    assertThat(zoneShare(counts, "a")).isEqualTo(1.0);
    assertThat((double) counts[0] / PICKS).isCloseTo(1 / 6.0, within(0.01));
    assertThat((double) counts[1] / PICKS).isCloseTo(2 / 6.0, within(0.01));
    assertThat((double) counts[2] / PICKS).isCloseTo(3 / 6.0, within(0.01));
  }

  @Test
  void aZoneThatLostCapacityKeepsTheShareItCarriesAndSpillsTheRest() {
    PickerPipeline pipeline = pipeline(weightedRandom);

    // Zone a lost its weight-3 endpoint: READY a = 3 of 9, expected share 6 of 12.
    SubchannelPicker picker = picker(pipeline, inZone("a"), 0, 1, 3, 4, 5);
    int[] counts = counts(picker);

    assertThat(((ZonePicker) picker).localShare()).isCloseTo((3 / 9.0) / 0.5, within(1e-9));
    assertThat(zoneShare(counts, "a")).isCloseTo(2 / 3.0, within(0.01));
    assertThat(counts[2]).isZero();
    // Inside zone b the spill follows the weights 1:2:3.
    int spilled = counts[3] + counts[4] + counts[5];
    assertThat((double) counts[5] / spilled).isCloseTo(0.5, within(0.015));
  }

  @Test
  void theSpillGoesToZonesWithSpareCapacityOnly() {
    // Three zones of registered weight 6 each: a lost 3 (READY 3), c lost 3 (READY 3), b whole.
    String[] zones = {"a", "a", "b", "b", "c", "c"};
    int[] declared = {3, 3, 3, 3, 3, 3};
    PickerPipeline pipeline = pipeline(weightedRandom);
    SubchannelPicker picker = picker(pipeline, inZone("a"),
        new Object[] {"a0", "a1", "b0", "b1", "c0", "c1"}, zones, declared, childPickers(6),
        0, 2, 3, 4);

    int[] counts = new int[6];
    for (int i = 0; i < PICKS; i++) {
      counts[indexOf(picker.pickSubchannel(null))]++;
    }

    // up(a) = 3/12, exp(a) = 1/3: a keeps 3/4. Spare: b = 6/12 - 1/3 > 0, c = 3/12 - 1/3 < 0.
    assertThat((double) counts[0] / PICKS).isCloseTo(0.75, within(0.01));
    assertThat(counts[4]).isZero();
    assertThat((double) (counts[2] + counts[3]) / PICKS).isCloseTo(0.25, within(0.01));
  }

  @Test
  void belowMinLocalEndpointsEveryZoneIsUsed() {
    PickerPipeline pipeline = pipeline(weightedRandom);
    WeightedPolicyConfig minTwo =
        config(ZoneRoutingConfig.builder().zone("a").minLocalEndpoints(2).build());

    assertThat(picker(pipeline, minTwo, 2, 3, 4, 5)).isNotInstanceOf(ZonePicker.class);
    assertThat(picker(pipeline, minTwo, 1, 2, 3, 4, 5)).isInstanceOf(ZonePicker.class);
  }

  @Test
  void noReadyLocalEndpointRoutesToEveryZone() {
    PickerPipeline pipeline = pipeline(weightedRandom);

    assertThat(picker(pipeline, inZone("a"), 3, 4, 5)).isNotInstanceOf(ZonePicker.class);
  }

  @Test
  void aPanicIsLoggedAtInfoButAScopeWithoutLocalEndpointsOnlyAtDebug() {
    ListAppender<ILoggingEvent> log = new ListAppender<>();
    Logger logger = (Logger) LoggerFactory.getLogger(ZoneRouting.class);
    Level level = logger.getLevel();
    logger.setLevel(Level.DEBUG);
    logger.addAppender(log);
    log.start();
    try {
      PickerPipeline pipeline = pipeline(weightedRandom);
      // A selection deployed to zone b only: no endpoint of it in zone a, READY or not.
      SubchannelPicker canary = picker(pipeline, inZone("a"), new Object[] {"b0", "b1"},
          new String[] {"b", "b"}, new int[] {1, 1}, childPickers(2), 0, 1);

      assertThat(canary).isNotInstanceOf(ZonePicker.class);
      assertThat(messages(log, Level.INFO)).isEmpty();
      assertThat(messages(log, Level.DEBUG))
          .containsExactly(
              "weighted_random: zone a has no endpoint; routing by weight across zones");

      // Zone a has endpoints, none READY: a panic.
      assertThat(picker(pipeline, inZone("a"), 3, 4, 5)).isNotInstanceOf(ZonePicker.class);
      assertThat(messages(log, Level.INFO))
          .containsExactly("weighted_random: zone a has 0 READY endpoints, below minLocalEndpoints"
              + " 1; routing to every zone");
    } finally {
      logger.detachAppender(log);
      logger.setLevel(level);
    }
  }

  private static List<String> messages(ListAppender<ILoggingEvent> log, Level level) {
    return log.list.stream()
        .filter(e -> e.getLevel() == level)
        .map(ILoggingEvent::getFormattedMessage)
        .toList();
  }

  @Test
  void aZoneThatRecoversTakesItsCallsBack() {
    PickerPipeline pipeline = pipeline(weightedRandom);
    assertThat(picker(pipeline, inZone("a"), 3, 4, 5)).isNotInstanceOf(ZonePicker.class);

    int[] counts = counts(picker(pipeline, inZone("a"), 0, 1, 2, 3, 4, 5));

    assertThat(zoneShare(counts, "a")).isEqualTo(1.0);
  }

  @Test
  void endpointsWithoutZoneAreInTheEmptyZone() {
    PickerPipeline pipeline = pipeline(weightedRandom);
    // Zone a registered 2 and READY 1 (w is not READY): up(a) = 1/3, exp(a) = 1/2, a keeps 2/3
    // of its calls and spills the rest to the two endpoints without zone, one zone "" of spare
    // capacity.
    SubchannelPicker picker = picker(pipeline, inZone("a"), new Object[] {"x", "y", "z", "w"},
        new String[] {"", "", "a", "a"}, new int[] {1, 1, 1, 1}, childPickers(4), 0, 1, 2);

    int[] counts = new int[3];
    for (int i = 0; i < PICKS; i++) {
      counts[indexOf(picker.pickSubchannel(null))]++;
    }
    assertThat((double) counts[2] / PICKS).isCloseTo(2 / 3.0, within(0.01));
    assertThat((double) counts[0] / PICKS).isCloseTo(1 / 6.0, within(0.01));
    assertThat((double) counts[1] / PICKS).isCloseTo(1 / 6.0, within(0.01));
  }

  @Test
  void leastRequestSpillsWhenTheLocalCandidateIsFullAndStaysWhenItIsNot() {
    LeastRequestPickerFactory factory =
        new LeastRequestPickerFactory(new FakeTicker(), new Random(3), TracerDecorator.NONE);
    PickerPipeline pipeline = pipeline(factory);
    // Weights 2 everywhere: an endpoint is full above 1 outstanding call per unit of weight.
    SubchannelPicker picker = picker(pipeline, inZone("a"), new Object[] {"a0", "a1", "b0", "b1"},
        new String[] {"a", "a", "b", "b"}, new int[] {2, 2, 2, 2}, childPickers(4), 0, 1, 2, 3);

    // Idle: (0 + 1) / 2 = 0.5 is not full, every call stays local.
    for (int i = 0; i < 1_000; i++) {
      assertThat(indexOf(picker.pickSubchannel(null))).isIn(0, 1);
    }

    // Two calls on each local endpoint: (2 + 1) / 2 = 1.5 > 1, and zone b is idle (0.5).
    for (Object key : new Object[] {"a0", "a1"}) {
      factory.load(key).callStarted();
      factory.load(key).callStarted();
    }
    for (int i = 0; i < 1_000; i++) {
      assertThat(indexOf(picker.pickSubchannel(null))).isIn(2, 3);
    }

    // Zone b as loaded as zone a: spilling would not help, calls stay local.
    for (Object key : new Object[] {"b0", "b1"}) {
      factory.load(key).callStarted();
      factory.load(key).callStarted();
    }
    for (int i = 0; i < 1_000; i++) {
      assertThat(indexOf(picker.pickSubchannel(null))).isIn(0, 1);
    }
  }

  @Test
  void leastRequestDoesNotSpillToAnIdleRemoteServerThatFailsEveryCall() {
    FakeTicker ticker = new FakeTicker();
    LeastRequestPickerFactory factory =
        new LeastRequestPickerFactory(ticker, new Random(3), TracerDecorator.NONE);
    PickerPipeline pipeline = pipeline(factory);
    SubchannelPicker picker = picker(pipeline, inZone("a"), new Object[] {"a0", "a1", "b0", "b1"},
        new String[] {"a", "a", "b", "b"}, new int[] {2, 2, 2, 2}, childPickers(4), 0, 1, 2, 3);
    // Zone b idle, every call it served failed: success ratio 0, errorCost = errorPenalty.
    for (Object key : new Object[] {"b0", "b1"}) {
      long start = ticker.read();
      factory.load(key).callStarted();
      ticker.advance(Duration.ofHours(1));
      factory.load(key).callEnded(start, Status.Code.UNAVAILABLE);
      assertThat(factory.load(key).successRatio()).isZero();
    }
    // Zone a full: (2 + 1) / 2 = 1.5 > 1, below zone b's 0.5 + 3.
    for (Object key : new Object[] {"a0", "a1"}) {
      factory.load(key).callStarted();
      factory.load(key).callStarted();
    }

    for (int i = 0; i < 1_000; i++) {
      assertThat(indexOf(picker.pickSubchannel(null))).isIn(0, 1);
    }
  }

  @Test
  void leastRequestKeepsEveryEndpointsLoadAcrossZonePickers() {
    LeastRequestPickerFactory factory =
        new LeastRequestPickerFactory(new FakeTicker(), new Random(3), TracerDecorator.NONE);
    PickerPipeline pipeline = pipeline(factory);
    SubchannelPicker[] all = childPickers(4);
    Object[] keys = {"a0", "a1", "b0", "b1"};
    String[] zones = {"a", "a", "b", "b"};
    picker(pipeline, inZone("a"), keys, zones, new int[] {2, 2, 2, 2}, all, 0, 1, 2, 3);
    EndpointLoad b0 = factory.load("b0");
    b0.callStarted();

    picker(pipeline, inZone("a"), keys, zones, new int[] {2, 2, 2, 3}, all, 0, 1, 2, 3);

    assertThat(factory.load("b0")).isSameAs(b0);
    assertThat(factory.load("a0")).isNotNull();
  }

  @Test
  void liveLoadSpillIsOffWithSpillLoadZero() {
    LeastRequestPickerFactory factory =
        new LeastRequestPickerFactory(new FakeTicker(), new Random(3), TracerDecorator.NONE);
    PickerPipeline pipeline = pipeline(factory);
    SubchannelPicker picker = picker(pipeline,
        config(ZoneRoutingConfig.builder().zone("a").spillLoad(0).build()),
        new Object[] {"a0", "b0"}, new String[] {"a", "b"}, new int[] {1, 1}, childPickers(2), 0, 1);
    for (int i = 0; i < 5; i++) {
      factory.load("a0").callStarted();
    }

    for (int i = 0; i < 1_000; i++) {
      assertThat(indexOf(picker.pickSubchannel(null))).isEqualTo(0);
    }
  }
}
