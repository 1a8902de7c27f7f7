package io.steelyard.xds;

import static org.assertj.core.api.Assertions.assertThat;

import io.envoyproxy.controlplane.cache.ConfigWatcher;
import io.envoyproxy.controlplane.cache.DeltaResponse;
import io.envoyproxy.controlplane.cache.DeltaWatch;
import io.envoyproxy.controlplane.cache.DeltaXdsRequest;
import io.envoyproxy.controlplane.cache.Response;
import io.envoyproxy.controlplane.cache.Watch;
import io.envoyproxy.controlplane.cache.XdsRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class GrantedWatcherTest {

  private static final String GREETER_ID = "spiffe://test/greeter-client";
  private static final String OPS_ID = "spiffe://test/ops";

  @TempDir Path dir;
  private final List<XdsRequest> delegated = new ArrayList<>();

  /** Records what reaches the cache; the watch itself does not matter here. */
  private final ConfigWatcher cache = new ConfigWatcher() {
    @Override
    public Watch createWatch(boolean ads, XdsRequest request, Set<String> knownResourceNames,
        Consumer<Response> responseConsumer, boolean hasClusterChanged, boolean allowDefaultEmptyEdsUpdate) {
      delegated.add(request);
      return null;
    }

    @Override
    public DeltaWatch createDeltaWatch(DeltaXdsRequest request, String requesterVersion,
        Map<String, String> resourceVersions, Set<String> pendingResources, boolean isWildcard,
        Consumer<DeltaResponse> responseConsumer, boolean hasClusterChanged) {
      return null;
    }
  };

  private GrantedWatcher watcher() throws Exception {
    Path file = Files.writeString(dir.resolve("grants.json"),
        "{\"grants\": [{\"identity\": \"%s\", \"services\": [\"greeter\"]}]}".formatted(GREETER_ID));
    return new GrantedWatcher(cache, GrantsFile.load(file), new XdsMetrics(new SimpleMeterRegistry(), null));
  }

  private static void ask(GrantedWatcher watcher, String identity, String... names) {
    XdsRequest request = XdsRequest.create(
        DiscoveryRequest.newBuilder().setTypeUrl(AdsProbe.CDS).addAllResourceNames(List.of(names)).build());
    ClientIdentity.withIdentity(identity).run(() -> watcher.createWatch(true, request, Set.of(), r -> {}, false, false));
  }

  @Test
  void aDenialIsLoggedOncePerIdentityAndName() throws Exception {
    GrantedWatcher watcher = watcher();
    try (Logs logs = Logs.of(GrantedWatcher.class)) {
      ask(watcher, GREETER_ID, "greeter", "billing");
      ask(watcher, GREETER_ID, "greeter", "billing");
      ask(watcher, GREETER_ID, "billing", "payroll");
      ask(watcher, OPS_ID, "billing");
      ask(watcher, OPS_ID, "billing");

      assertThat(logs.lines()).hasSize(3).allMatch(l -> l.startsWith("WARN Client "));
      assertThat(logs.lines().get(0)).startsWith("WARN Client '" + GREETER_ID + "' asked for 'billing' (CDS)");
      assertThat(logs.lines().get(1)).startsWith("WARN Client '" + GREETER_ID + "' asked for 'payroll' (CDS)");
      assertThat(logs.lines().get(2)).startsWith("WARN Client '" + OPS_ID + "' asked for 'billing' (CDS)");
    }
    assertThat(delegated).as("every request still reaches the cache, to be filtered on its way back").hasSize(5);
  }
}
