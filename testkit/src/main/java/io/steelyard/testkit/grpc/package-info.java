/**
 * grpc-java fixtures shared by every module's tests (and the benchmarks): a fake
 * {@link io.grpc.LoadBalancer.Helper} for driving a balancer without a channel ({@link
 * io.steelyard.testkit.grpc.FakeHelper}), a name resolver with a fixed endpoint list ({@link
 * io.steelyard.testkit.grpc.StaticResolverProvider}), and a policy that records what a real
 * channel's resolver delivers ({@link io.steelyard.testkit.grpc.RecordingLoadBalancerProvider}).
 *
 * <p>Needs {@code grpc-api} on the test classpath, which every user of this package has anyway.
 */
package io.steelyard.testkit.grpc;
