/**
 * The registration agent: announces one instance of a service in etcd under a lease and keeps it
 * there through etcd trouble ({@link io.steelyard.agent.ServiceRegistration}), shares one lease
 * between the registrations of a process ({@link io.steelyard.agent.SharedLease}), takes a weight
 * that changes over time from a {@link io.steelyard.agent.WeightSource}, ties it to a
 * grpc-java server's lifecycle and health service ({@link io.steelyard.agent.RegisteredServer}),
 * and reads and rewrites registered instances for the agent and the CLI alike ({@link
 * io.steelyard.agent.InstanceStore}). See {@code docs/agent.md} for the lifecycle, the recovery
 * rules and the configuration.
 */
@ParametersAreNonnullByDefault
package io.steelyard.agent;

import javax.annotation.ParametersAreNonnullByDefault;
