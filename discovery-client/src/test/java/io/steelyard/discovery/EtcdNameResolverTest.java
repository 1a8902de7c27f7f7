package io.steelyard.discovery;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.grpc.Attributes;
import io.grpc.EquivalentAddressGroup;
import io.grpc.NameResolver;
import io.grpc.Status;
import io.grpc.SynchronizationContext;
import io.steelyard.registry.EndpointWeights;
import io.steelyard.registry.Localities;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.ServiceInstance;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

class EtcdNameResolverTest {

  private final SynchronizationContext syncContext =
      new SynchronizationContext((t, e) -> {
        throw new AssertionError(e);
      });
  // Appended from the DNS fallback thread in one test.
  private final List<List<EquivalentAddressGroup>> results = new CopyOnWriteArrayList<>();
  private final List<Status> errors = new ArrayList<>();
  private final AtomicBoolean released = new AtomicBoolean();
  private WatchListener source;

  private final NameResolver.Listener2 listener = new NameResolver.Listener2() {
    @Override
    public void onResult(NameResolver.ResolutionResult result) {
      throw new AssertionError("onResult2 expected");
    }

    @Override
    public Status onResult2(NameResolver.ResolutionResult result) {
      results.add(result.getAddressesOrError().getValue());
      attributes.add(result.getAttributes());
      return Status.OK;
    }

    @Override
    public void onError(Status error) {
      errors.add(error);
    }
  };

  private final List<Attributes> attributes = new ArrayList<>();

  private final EtcdNameResolver resolver = new EtcdNameResolver("greeter", "service greeter", l -> {
    source = l;
    return () -> released.set(true);
  }, syncContext, task -> {
    throw new AssertionError("IP literals need no lookup");
  });

  private static Snapshot snapshot(long rev, Instant staleSince, ServiceInstance... instances) {
    return new Snapshot("greeter", List.of(instances), rev, staleSince);
  }

  private void start() {
    syncContext.execute(() -> resolver.start(listener));
  }

  @Test
  void pushesEveryAddressWithItsWeightAndMetadata() throws Exception {
    start();
    source.onSnapshot(snapshot(3, null,
        new ServiceInstance("greeter", "10.0.0.1:50051", 5, Map.of("zone", "a")),
        ServiceInstance.of("greeter", "[::1]:50052", 0)));
    assertThat(results).hasSize(1);
    List<EquivalentAddressGroup> eags = results.get(0);
    assertThat(eags).hasSize(2);
    assertThat(eags.get(0).getAddresses())
        .containsExactly(new InetSocketAddress(InetAddress.getByName("10.0.0.1"), 50051));
    assertThat(EndpointWeights.weight(eags.get(0))).isEqualTo(5);
    assertThat(EndpointWeights.metadata(eags.get(0))).containsEntry("zone", "a");
    assertThat(eags.get(1).getAddresses())
        .containsExactly(new InetSocketAddress(InetAddress.getByName("::1"), 50052));
    assertThat(EndpointWeights.weight(eags.get(1))).isZero();
  }

  @Test
  void everyResolutionCarriesTheCallersZoneWhenItIsKnown() {
    EtcdNameResolver inZone = new EtcdNameResolver("greeter", "service greeter", l -> {
      source = l;
      return () -> released.set(true);
    }, syncContext, task -> {
      throw new AssertionError("IP literals need no lookup");
    }, null, null, "eu-1a");
    syncContext.execute(() -> inZone.start(listener));
    source.onSnapshot(snapshot(3, null, ServiceInstance.of("greeter", "10.0.0.1:50051", 1)));
    source.onSnapshot(snapshot(4, null, ServiceInstance.of("greeter", "10.0.0.1:50051", 2)));
    syncContext.execute(inZone::shutdown);

    assertThat(attributes).hasSize(2)
        .allSatisfy(a -> assertThat(a.get(Localities.CALLER_ZONE)).isEqualTo("eu-1a"));
  }

  @Test
  void withoutACallerZoneTheResolutionCarriesNone() {
    start();
    source.onSnapshot(snapshot(3, null, ServiceInstance.of("greeter", "10.0.0.1:50051", 1)));

    assertThat(attributes).singleElement()
        .satisfies(a -> assertThat(a.get(Localities.CALLER_ZONE)).isNull());
  }

  @Test
  void anUnchangedInstanceKeepsItsAddressGroupAcrossPushes() {
    start();
    ServiceInstance kept = ServiceInstance.of("greeter", "10.0.0.1:50051", 1);
    ServiceInstance changed = ServiceInstance.of("greeter", "10.0.0.2:50051", 1);
    source.onSnapshot(snapshot(3, null, kept, changed));
    source.onSnapshot(snapshot(4, null, kept, changed.withWeight(7)));
    assertThat(results).hasSize(2);
    assertThat(results.get(1).get(0)).isSameAs(results.get(0).get(0));
    assertThat(results.get(1).get(1)).isNotSameAs(results.get(0).get(1));
    assertThat(EndpointWeights.weight(results.get(1).get(1))).isEqualTo(7);
  }

  @Test
  void hostNamesBecomeOneGroupOfAllTheirAddressesAndUnresolvedOnesAreLeftOut() throws Exception {
    InetAddress a = InetAddress.getByName("10.1.1.1");
    InetAddress b = InetAddress.getByName("10.1.1.2");
    List<EquivalentAddressGroup> eags = EtcdNameResolver.toAddressGroups(
        List.of(ServiceInstance.of("greeter", "greeter-0.internal:50051", 4),
            ServiceInstance.of("greeter", "gone.internal:50051", 1)),
        Map.of("greeter-0.internal", List.of(a, b), "gone.internal", List.of()));
    assertThat(eags).singleElement().satisfies(eag -> {
      assertThat(eag.getAddresses()).containsExactly(new InetSocketAddress(a, 50051), new InetSocketAddress(b, 50051));
      assertThat(EndpointWeights.weight(eag)).isEqualTo(4);
    });
  }

  @Test
  void hostNamesAreLookedUpOffTheSyncContextBeforeThePush() throws Exception {
    List<Runnable> lookups = new ArrayList<>();
    EtcdNameResolver withDns = new EtcdNameResolver("greeter", "service greeter", l -> {
      source = l;
      return () -> {};
    }, syncContext, lookups::add);
    syncContext.execute(() -> withDns.start(listener));
    source.onSnapshot(snapshot(3, null, ServiceInstance.of("greeter", "localhost:50051", 1)));
    assertThat(results).isEmpty(); // waiting for the lookup
    assertThat(lookups).hasSize(1);
    lookups.remove(0).run();
    assertThat(results).singleElement().satisfies(eags -> assertThat(eags).singleElement()
        .satisfies(eag -> assertThat(eag.getAddresses()).allSatisfy(sa ->
            assertThat(((InetSocketAddress) sa).getAddress().isLoopbackAddress()).isTrue())));
    // Known now: the next snapshot with the same name needs no lookup.
    source.onSnapshot(snapshot(4, null, ServiceInstance.of("greeter", "localhost:50051", 2)));
    assertThat(lookups).isEmpty();
    assertThat(results).hasSize(2);
  }

  @Test
  void withoutAnOffloadExecutorLookupsRunOnTheirOwnDaemonThread() {
    EtcdNameResolver noOffload = new EtcdNameResolver("greeter", "service greeter", l -> {
      source = l;
      return () -> {};
    }, syncContext, null);
    syncContext.execute(() -> noOffload.start(listener));
    source.onSnapshot(snapshot(3, null, ServiceInstance.of("greeter", "localhost:50051", 1)));
    await().atMost(Duration.ofSeconds(10)).until(() -> results.size() == 1);
    assertThat(results.get(0)).singleElement().satisfies(eag -> assertThat(eag.getAddresses())
        .allSatisfy(sa -> assertThat(((InetSocketAddress) sa).getAddress().isLoopbackAddress()).isTrue()));
  }

  @Test
  void staleSnapshotWithTheSameInstancesIsNotPushedAgain() {
    start();
    ServiceInstance a = ServiceInstance.of("greeter", "10.0.0.1:1", 1);
    source.onSnapshot(snapshot(3, null, a));
    source.onSnapshot(snapshot(3, Instant.ofEpochSecond(100), a));
    source.onSnapshot(snapshot(4, null, a));
    assertThat(results).hasSize(1);
    assertThat(errors).isEmpty();
  }

  @Test
  void etcdUnreachableBeforeAnyListIsReportedAsUnavailable() {
    start();
    source.onUnavailable(new IOException("connection refused"));
    assertThat(errors).singleElement().satisfies(s -> {
      assertThat(s.getCode()).isEqualTo(Status.Code.UNAVAILABLE);
      assertThat(s.getDescription()).contains("service greeter");
      assertThat(s.getCause()).hasMessage("connection refused");
    });
  }

  @Test
  void aRefusalBeforeAnyListIsNamedAsARefusalNotUnreachability() {
    start();
    source.onUnavailable(new RegistryException(RegistryException.Kind.PERMISSION_DENIED,
        "etcd refused list /services/greeter/: permission denied (PERMISSION_DENIED)", null));
    assertThat(errors).singleElement().satisfies(s -> {
      assertThat(s.getCode()).isEqualTo(Status.Code.UNAVAILABLE);
      assertThat(s.getDescription())
          .startsWith("etcd refused to list service greeter: ")
          .contains("permission denied")
          .doesNotContain("unreachable");
    });
  }

  @Test
  void etcdUnreachableAfterAListIsNeverReported() {
    start();
    source.onSnapshot(snapshot(3, null, ServiceInstance.of("greeter", "10.0.0.1:1", 1)));
    source.onUnavailable(new IOException("connection refused"));
    assertThat(errors).isEmpty();
    assertThat(results).hasSize(1);
  }

  @Test
  void anEmptyListFromEtcdIsPushed() {
    start();
    source.onSnapshot(snapshot(3, null, ServiceInstance.of("greeter", "10.0.0.1:1", 1)));
    source.onSnapshot(snapshot(4, null));
    assertThat(results).hasSize(2);
    assertThat(results.get(1)).isEmpty();
  }

  @Test
  void shutdownReleasesTheWatchAndIgnoresLateSnapshots() {
    start();
    syncContext.execute(resolver::shutdown);
    assertThat(released).isTrue();
    source.onSnapshot(snapshot(3, null, ServiceInstance.of("greeter", "10.0.0.1:1", 1)));
    assertThat(results).isEmpty();
  }

  @Test
  void authorityIsTheServiceName() {
    assertThat(resolver.getServiceAuthority()).isEqualTo("greeter");
  }
}
