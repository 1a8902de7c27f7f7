/**
 * The {@code steelyard} operator CLI ({@code bin/steelyard}, see {@code docs/cli.md}); its only
 * public type is the entry point {@link io.steelyard.cli.SteelyardCli}. Everything here is
 * package-private and carries no compatibility promise except the command line itself: commands,
 * options, output lines and exit codes.
 *
 * <p>Every read and rewrite goes through {@link io.steelyard.registry.admin.InstanceStore}, the
 * operator's path every tool shares (the write commands through one class, {@code WriteCommand}),
 * the sidecar through {@link io.steelyard.agent.ServiceRegistration}, the agent's, and {@code
 * watch} follows a service through {@link io.steelyard.discovery.ServiceWatcher}, the client's;
 * input is validated before a client is built, so bad input never reaches etcd.
 */
@ParametersAreNonnullByDefault
package io.steelyard.cli;

import javax.annotation.ParametersAreNonnullByDefault;
