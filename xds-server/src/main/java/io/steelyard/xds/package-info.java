/**
 * An xDS control plane over the registry: {@link io.steelyard.xds.XdsServer} serves every
 * service under a key prefix over ADS (LDS, CDS, EDS; state of the world and delta), so that
 * gRPC clients in any language and Envoy dial {@code xds:///SERVICE} with the registered
 * weights; {@link io.steelyard.xds.XdsMain} is {@code bin/steelyard-xds}. See docs/xds.md.
 */
@javax.annotation.ParametersAreNonnullByDefault
package io.steelyard.xds;
