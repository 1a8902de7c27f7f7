package io.steelyard.discovery;

import io.grpc.NameResolver.ConfigOrError;
import io.grpc.NameResolver.ServiceConfigParser;
import io.steelyard.registry.ServiceConfigJson;
import java.util.Map;
import java.util.function.BooleanSupplier;
import java.util.function.LongPredicate;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which service config one channel's resolver hands grpc, from what the registry holds: the
 * stored config once the channel's own parser accepted it (grpc's {@code parseServiceConfig},
 * which runs the balancer providers' {@code parseLoadBalancingPolicyConfig}: the same code
 * {@code steelyard config set} validates with); the last accepted one when a newer stored config
 * is refused (logged once per refused revision for all channels of the process). "Last accepted"
 * is per service, not per channel: a channel created while the stored config is refused starts on
 * the config another channel of the service accepted before ({@link Memory}, kept by the
 * service's {@link ServiceConfigWatcher}), so every channel of the process runs one policy. The
 * resolver's fallback config applies when none is stored, and when the stored one is refused in
 * a process that never accepted any. With no fallback and nothing accepted it hands grpc nothing,
 * so the channel's own {@code defaultServiceConfig} and then {@code defaultLoadBalancingPolicy}
 * apply (grpc's rule).
 *
 * <p>Threading: the channel's SynchronizationContext only.
 */
final class ServiceConfigChoice {

  private static final Logger logger = LoggerFactory.getLogger(ServiceConfigChoice.class);

  /** A stored config a channel accepted, and its mod revision; a null json for none. */
  record Accepted(@Nullable String json, long modRevision) {}

  /**
   * The last stored config any channel of the service accepted, shared by all of them. Any
   * thread.
   */
  interface Memory {
    /** Remembers {@code json}, unless a later revision is already remembered (or deleted). */
    void accepted(String json, long modRevision);

    /** The last config accepted since the stored one was last deleted; null for none. */
    @Nullable
    Accepted lastAccepted();
  }

  /** No memory beyond the channel: for a resolver without a config watch, and for tests. */
  static final Memory NO_MEMORY = new Memory() {
    @Override
    public void accepted(String json, long modRevision) {}

    @Override
    @Nullable
    public Accepted lastAccepted() {
      return null;
    }
  };

  private final String service;
  @Nullable private final ServiceConfigParser parser;
  @Nullable private final Map<String, ?> fallback;
  private final LongPredicate firstToReport;
  private final BooleanSupplier firstToAnnounceFallback;
  private final Memory memory;

  private StoredServiceConfig seen = StoredServiceConfig.UNKNOWN;
  @Nullable private ConfigOrError accepted;
  private long acceptedRevision;
  @Nullable private String acceptedJson;
  @Nullable private ConfigOrError fallbackParsed;
  @Nullable private ConfigOrError effective;

  /**
   * @param parser the channel's parser ({@link io.grpc.NameResolver.Args#getServiceConfigParser});
   *     null hands grpc no service config at all
   * @param fallback the service config while none is stored; null or empty for none
   * @param firstToReport whether a refused config at a mod revision is to be logged (shared by
   *     every channel of the service, see {@link ServiceConfigWatcher#firstToReport})
   */
  ServiceConfigChoice(
      String service,
      @Nullable ServiceConfigParser parser,
      @Nullable Map<String, ?> fallback,
      LongPredicate firstToReport) {
    this(service, parser, fallback, firstToReport, () -> false, NO_MEMORY);
  }

  /**
   * @param firstToAnnounceFallback whether to log that the fallback is in force (once per service)
   * @param memory the last config a channel of the service accepted
   */
  ServiceConfigChoice(
      String service,
      @Nullable ServiceConfigParser parser,
      @Nullable Map<String, ?> fallback,
      LongPredicate firstToReport,
      BooleanSupplier firstToAnnounceFallback,
      Memory memory) {
    this.service = service;
    this.parser = parser;
    this.fallback = fallback == null || fallback.isEmpty() ? null : fallback;
    this.firstToReport = firstToReport;
    this.firstToAnnounceFallback = firstToAnnounceFallback;
    this.memory = memory;
  }

  /** Whether the registry's answer is in (or reading it failed): a resolver may publish. */
  boolean settled() {
    return seen.settled();
  }

  /** The service config to hand grpc now; null for none. */
  @Nullable
  ConfigOrError effective() {
    return effective;
  }

  /** Takes in what the registry holds; returns whether {@link #effective()} changed. */
  boolean update(StoredServiceConfig config) {
    seen = config;
    if (parser == null || !config.settled()) {
      return false;
    }
    switch (config.state()) {
      case UNKNOWN, UNREADABLE -> { } // keep what is in force
      case ABSENT -> accepted = null;
      case PRESENT -> accept(config);
    }
    ConfigOrError next = accepted != null ? accepted : fallback();
    if (next != null && next == fallbackParsed && next != effective
        && firstToAnnounceFallback.getAsBoolean()) {
      // grpc ranks a resolver's config above the channel's own defaults: say so where it shows.
      logger.info("No service config stored for {}: its channels use the resolver's fallback {},"
          + " which outranks a channel's defaultLoadBalancingPolicy and defaultServiceConfig"
          + " (EtcdNameResolverProvider.FALLBACK_SERVICE_CONFIG; docs/balancer.md)", service, fallback);
    }
    boolean changed = next != effective;
    effective = next;
    return changed;
  }

  private void accept(StoredServiceConfig config) {
    if (accepted != null
        && (config.modRevision() == acceptedRevision || config.json().equals(acceptedJson))) {
      acceptedRevision = config.modRevision(); // the same text again: nothing for grpc to do
      return;
    }
    String why;
    try {
      ConfigOrError parsed = parser.parseServiceConfig(ServiceConfigJson.parse(config.json()));
      if (parsed.getError() == null) {
        accepted = parsed;
        acceptedRevision = config.modRevision();
        acceptedJson = config.json();
        memory.accepted(config.json(), config.modRevision());
        return;
      }
      why = ServiceConfigJson.refusal(parsed.getError());
    } catch (IllegalArgumentException e) {
      why = e.getMessage();
    }
    if (accepted == null) {
      adoptRemembered(config.modRevision());
    }
    if (firstToReport.test(config.modRevision())) {
      logger.warn("Ignoring the service config of {} stored at revision {}: {}; keeping {}",
          service, config.modRevision(), why,
          accepted != null
              ? "the one of revision " + acceptedRevision
              : fallback != null ? "the resolver's fallback " + fallback : "the channel's default");
    }
  }

  /**
   * A channel that never accepted a config takes the one another channel of the service accepted
   * before {@code refusedRevision}, if its own parser accepts it too.
   */
  private void adoptRemembered(long refusedRevision) {
    Accepted last = memory.lastAccepted();
    if (last == null || last.json() == null || last.modRevision() >= refusedRevision) {
      return;
    }
    try {
      ConfigOrError parsed = parser.parseServiceConfig(ServiceConfigJson.parse(last.json()));
      if (parsed.getError() == null) {
        accepted = parsed;
        acceptedRevision = last.modRevision();
        acceptedJson = last.json();
      }
    } catch (IllegalArgumentException e) {
      logger.debug("The config of {} accepted at revision {} does not parse here", service,
          last.modRevision(), e);
    }
  }

  @Nullable
  private ConfigOrError fallback() {
    if (fallback == null) {
      return null;
    }
    if (fallbackParsed == null) {
      fallbackParsed = parser.parseServiceConfig(fallback);
      if (fallbackParsed.getError() != null) {
        logger.warn("The fallback service config {} of {} is refused ({}); handing grpc none",
            fallback, service, fallbackParsed.getError());
      }
    }
    return fallbackParsed.getError() == null ? fallbackParsed : null;
  }
}
