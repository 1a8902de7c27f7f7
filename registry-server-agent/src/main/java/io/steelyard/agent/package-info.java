/**
 * The registration agent: announces one instance of a service in etcd under a lease and keeps it
 * there through etcd trouble ({@link io.steelyard.agent.ServiceRegistration}), shares one lease
 * between the registrations of a process ({@link io.steelyard.agent.SharedLease}), takes a weight
 * that changes over time from a {@link io.steelyard.agent.WeightSource}, ties it to a
 * grpc-java server's lifecycle, health service and shutdown order ({@link
 * io.steelyard.agent.RegisteredServer}, {@link io.steelyard.agent.ShutdownSequence}). An
 * operator's reads and rewrites of registered instances live in the contract module ({@link
 * io.steelyard.registry.admin.InstanceStore}). See {@code docs/agent.md} for the lifecycle, the recovery
 * rules and the configuration.
 */
@ParametersAreNonnullByDefault
package io.steelyard.agent;

import javax.annotation.ParametersAreNonnullByDefault;
