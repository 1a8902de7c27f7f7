/**
 * The operator's side of the registry: read the instances registered under a service ({@link
 * io.steelyard.registry.admin.InstanceStore}) and change one of them ({@link
 * io.steelyard.registry.admin.InstanceWrite}: set its weight, drain, undrain, deregister), and
 * read, check and set the service config of a service's clients ({@link
 * io.steelyard.registry.admin.ServiceConfigStore}). The {@code steelyard} CLI, the Spring Boot
 * actuator endpoint and any console go through these classes, so every tool checks an operator's
 * input by the same rule and tells the outcome in the same words.
 */
@ParametersAreNonnullByDefault
package io.steelyard.registry.admin;

import javax.annotation.ParametersAreNonnullByDefault;
