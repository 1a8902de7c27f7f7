/**
 * SmallRye Stork providers over the steelyard registry: service discovery {@code steelyard},
 * load balancer {@code steelyard-weighted} and service registrar {@code steelyard}, configured as
 * Stork's own providers are ({@code stork.SERVICE.service-discovery.type=steelyard}, in Quarkus
 * under {@code quarkus.}). See {@code docs/quarkus.md}.
 */
@javax.annotation.ParametersAreNonnullByDefault
package io.steelyard.stork;
