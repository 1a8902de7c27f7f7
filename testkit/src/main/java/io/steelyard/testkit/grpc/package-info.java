/**
 * grpc-java fixtures shared by every module's tests (and the benchmarks): a fake
 * {@link io.grpc.LoadBalancer.Helper} for driving a balancer without a channel ({@link
 * io.steelyard.testkit.grpc.FakeHelper}), a name resolver with a fixed endpoint list ({@link
 * io.steelyard.testkit.grpc.StaticResolverProvider}), a policy that records what a real
 * channel's resolver delivers ({@link io.steelyard.testkit.grpc.RecordingLoadBalancerProvider}),
 * and real health-check servers that count the calls each one serves ({@link
 * io.steelyard.testkit.grpc.CountingHealthServers}).
 *
 * <p>Needs {@code grpc-api} on the test classpath, which every user of this package has anyway;
 * {@code CountingHealthServers} also needs {@code grpc-services}.
 */
package io.steelyard.testkit.grpc;
