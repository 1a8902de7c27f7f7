package io.steelyard.xds;

import io.steelyard.balancer.spi.SlowStartConfig;
import io.steelyard.balancer.spi.ZoneRoutingConfig;
import javax.annotation.Nullable;

/**
 * The zone-routing and slow-start settings of a service, from its stored service config: those
 * of the weighted policy a channel picks, read by that policy's own parser ({@link
 * ConfigMapping}), the one that reads them for Java channels and for {@code steelyard config
 * set}. No stored config, or one without a steelyard weighted policy, gives the defaults: zone
 * routing on, no slow start.
 *
 * @param zoneRouting the {@code zoneRouting} option
 * @param slowStart the {@code slowStart} option, or null for none
 */
record StoredPolicy(ZoneRoutingConfig zoneRouting, @Nullable SlowStartConfig slowStart) {

  /** Zone routing on with its defaults, no slow start. */
  static final StoredPolicy DEFAULT = new StoredPolicy(ZoneRoutingConfig.DEFAULT, null);
}
