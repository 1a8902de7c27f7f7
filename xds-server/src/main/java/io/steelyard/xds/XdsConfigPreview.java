package io.steelyard.xds;

import static java.util.Objects.requireNonNull;

import io.steelyard.discovery.ChannelConfigCheck;
import java.util.List;

/**
 * What {@code steelyard-xds} serves of a service config, and what it leaves out: the control
 * plane's own mapping, for tools that show it before the config is stored ({@code steelyard
 * config validate}).
 *
 * <pre>{@code
 * XdsConfigPreview preview = XdsConfigPreview.of(ChannelConfigCheck.create(), json);
 * preview.served().forEach(System.out::println);  // e.g. "outlier_detection_experimental: Cluster outlier_detection (...)"
 * preview.leftOut().forEach(System.out::println); // e.g. "retryThrottling"
 * }</pre>
 *
 * <p>Immutable.
 */
public final class XdsConfigPreview {

  private final MappedConfig mapped;

  private XdsConfigPreview(MappedConfig mapped) {
    this.mapped = mapped;
  }

  /**
   * The mapping of {@code json}, checked with {@code check} as the control plane checks a stored
   * config.
   *
   * @throws IllegalArgumentException with the parser's one-line reason when the config is refused
   */
  public static XdsConfigPreview of(ChannelConfigCheck check, String json) {
    return new XdsConfigPreview(new ConfigMapping(check).map(requireNonNull(json, "json")));
  }

  /** One line per part served, naming the xDS field it becomes. */
  public List<String> served() {
    return mapped.served();
  }

  /** One line per part left out (xDS has no form for it), naming it. */
  public List<String> leftOut() {
    return mapped.leftOut();
  }
}
