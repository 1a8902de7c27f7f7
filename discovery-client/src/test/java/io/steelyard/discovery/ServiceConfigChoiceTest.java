package io.steelyard.discovery;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.grpc.NameResolver.ConfigOrError;
import io.grpc.NameResolver.ServiceConfigParser;
import io.grpc.Status;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * {@link ServiceConfigChoice} with a parser that accepts any config without {@code "bad"}, as
 * grpc's does with a refused policy field.
 */
class ServiceConfigChoiceTest {

  private static final Map<String, ?> FALLBACK =
      Map.of("loadBalancingConfig", List.of(Map.of("weighted_random", Map.of())));

  private final List<Map<String, ?>> parsed = new ArrayList<>();
  private final List<Long> reported = new ArrayList<>();
  private final ServiceConfigParser parser = new ServiceConfigParser() {
    @Override
    public ConfigOrError parseServiceConfig(Map<String, ?> raw) {
      parsed.add(raw);
      return raw.containsKey("bad")
          ? ConfigOrError.fromError(Status.UNAVAILABLE.withDescription("bad: refused"))
          : ConfigOrError.fromConfig(raw);
    }
  };

  private ServiceConfigChoice choice(Map<String, ?> fallback) {
    return new ServiceConfigChoice("greeter", parser, fallback, revision -> {
      reported.add(revision);
      return true;
    });
  }

  private static Object config(ServiceConfigChoice c) {
    return c.effective() == null ? null : c.effective().getConfig();
  }

  @Test
  void notSettledUntilTheRegistryAnswers() {
    ServiceConfigChoice c = choice(FALLBACK);

    assertThat(c.update(StoredServiceConfig.UNKNOWN)).isFalse();

    assertThat(c.settled()).isFalse();
    assertThat(c.effective()).isNull();
  }

  @Test
  void noStoredConfigGivesTheFallback() {
    ServiceConfigChoice c = choice(FALLBACK);

    assertThat(c.update(StoredServiceConfig.ABSENT)).isTrue();

    assertThat(c.settled()).isTrue();
    assertThat(config(c)).isEqualTo(FALLBACK);
  }

  @Test
  void anEmptyFallbackHandsGrpcNothingSoTheChannelsDefaultApplies() {
    ServiceConfigChoice c = choice(Map.of());

    c.update(StoredServiceConfig.ABSENT);

    assertThat(c.settled()).isTrue();
    assertThat(c.effective()).isNull();
  }

  @Test
  void aStoredConfigWinsOverTheFallback() {
    ServiceConfigChoice c = choice(FALLBACK);
    c.update(StoredServiceConfig.ABSENT);

    assertThat(c.update(StoredServiceConfig.present("{\"loadBalancingConfig\":[]}", 4))).isTrue();

    assertThat(config(c)).isEqualTo(Map.of("loadBalancingConfig", List.of()));
  }

  @Test
  void aRefusedConfigIsReportedOnceAndTheLastGoodOneStays() {
    ServiceConfigChoice c = choice(FALLBACK);
    c.update(StoredServiceConfig.present("{\"good\":1}", 4));
    Object good = config(c);

    assertThat(c.update(StoredServiceConfig.present("{\"bad\":1}", 5))).isFalse();
    assertThat(c.update(StoredServiceConfig.present("{\"bad\":1}", 5))).isFalse();
    assertThat(c.update(StoredServiceConfig.present("{\"loadBalancingConfig\":", 6))).isFalse();

    assertThat(config(c)).isSameAs(good);
    assertThat(reported).containsExactly(5L, 5L, 6L); // the watcher's predicate dedups across channels
  }

  @Test
  void aRefusedFirstConfigLeavesTheFallback() {
    ServiceConfigChoice c = choice(FALLBACK);

    c.update(StoredServiceConfig.present("{\"bad\":1}", 5));

    assertThat(config(c)).isEqualTo(FALLBACK);
  }

  @Test
  void aDeletedConfigGoesBackToTheFallback() {
    ServiceConfigChoice c = choice(FALLBACK);
    c.update(StoredServiceConfig.present("{\"good\":1}", 4));

    assertThat(c.update(StoredServiceConfig.ABSENT)).isTrue();

    assertThat(config(c)).isEqualTo(FALLBACK);
  }

  @Test
  void etcdFailingKeepsTheConfigInForce() {
    ServiceConfigChoice c = choice(FALLBACK);
    c.update(StoredServiceConfig.present("{\"good\":1}", 4));
    Object good = config(c);

    assertThat(c.update(StoredServiceConfig.UNREADABLE)).isFalse();

    assertThat(config(c)).isSameAs(good);
  }

  @Test
  void theSameRevisionIsNotParsedAgain() {
    ServiceConfigChoice c = choice(FALLBACK);
    c.update(StoredServiceConfig.present("{\"good\":1}", 4));
    int parses = parsed.size();

    assertThat(c.update(StoredServiceConfig.present("{\"good\":1}", 4))).isFalse();

    assertThat(parsed).hasSize(parses);
  }

  @Test
  void withoutAParserGrpcGetsNoServiceConfig() {
    ServiceConfigChoice c = new ServiceConfigChoice("greeter", null, FALLBACK, r -> true);

    c.update(StoredServiceConfig.present("{\"good\":1}", 4));

    assertThat(c.settled()).isTrue();
    assertThat(c.effective()).isNull();
  }

  @Test
  void theSameTextAtANewRevisionChangesNothing() {
    ServiceConfigChoice c = choice(FALLBACK);
    c.update(StoredServiceConfig.present("{\"good\":1}", 4));
    int parses = parsed.size();

    assertThat(c.update(StoredServiceConfig.present("{\"good\":1}", 9))).isFalse();

    assertThat(parsed).hasSize(parses);
  }

  @Test
  void theWarningGivesTheRefusalAsTheCliDoesCauseIncluded() {
    ServiceConfigParser withCause = new ServiceConfigParser() {
      @Override
      public ConfigOrError parseServiceConfig(Map<String, ?> raw) {
        return ConfigOrError.fromError(Status.UNKNOWN
            .withDescription("failed to parse service config")
            .withCause(new IllegalArgumentException("weighted_random.subset: 3.0 (expected: an object)")));
      }
    };
    ServiceConfigChoice c = new ServiceConfigChoice("greeter", withCause, FALLBACK, r -> true);
    Logger log = (Logger) LoggerFactory.getLogger(ServiceConfigChoice.class);
    ListAppender<ILoggingEvent> logs = new ListAppender<>();
    logs.start();
    log.addAppender(logs);
    try {
      c.update(StoredServiceConfig.present("{\"loadBalancingConfig\":[]}", 5));
    } finally {
      log.detachAppender(logs);
    }

    assertThat(logs.list).extracting(ILoggingEvent::getFormattedMessage).anyMatch(m -> m.contains(
        "revision 5: failed to parse service config: weighted_random.subset: 3.0 (expected: an object);"));
  }
}
