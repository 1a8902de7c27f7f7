/**
 * {@code steelyard console}: the registry in a browser. {@link io.steelyard.console.ConsoleServer}
 * serves a services page, one page per service (instances, weights, lease TTLs, live metrics and a
 * chart of expected against observed share) and the CLI's actions (weight, drain, undrain,
 * deregister) on the JDK's built-in HTTP server, with its pages and scripts shipped in the jar.
 * Everything but {@code ConsoleServer} is package-private.
 */
@ParametersAreNonnullByDefault
package io.steelyard.console;

import javax.annotation.ParametersAreNonnullByDefault;
