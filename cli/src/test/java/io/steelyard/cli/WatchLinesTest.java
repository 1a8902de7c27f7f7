package io.steelyard.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.steelyard.discovery.Snapshot.MalformedKey;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.ServiceInstance;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The lines of {@code steelyard watch}, from pairs of snapshot views; no etcd needed. */
class WatchLinesTest {

  private static final String SERVICE = "greeter";
  private static final String A = "10.0.0.7:50051";
  private static final String B = "10.0.0.8:50051";

  private final KeyLayout layout = KeyLayout.defaults();
  private final WatchLines lines = new WatchLines(layout, SERVICE);

  @Test
  void firstViewPrintsInstancesAndMalformedKeysInKeyOrder() {
    WatchLines.View first =
        view(
            List.of(instance(A, 5), new ServiceInstance(SERVICE, B, 2, Map.of("zone", "b"))),
            List.of(malformed(key("10.0.0.7:60000"), "'empty value'")));

    assertThat(lines.present(first))
        .containsExactly(
            "present 10.0.0.7:50051 weight=5",
            "malformed /services/greeter/10.0.0.7:60000: empty value",
            "present 10.0.0.8:50051 weight=2 zone=b");
  }

  @Test
  void newInstanceIsAdded() {
    assertThat(lines.changes(view(instance(A, 5)), view(instance(A, 5), instance(B, 2))))
        .containsExactly("added 10.0.0.8:50051 weight=2");
  }

  @Test
  void weightChangeShowsOldAndNew() {
    assertThat(lines.changes(view(instance(A, 5)), view(instance(A, 8))))
        .containsExactly("weight 10.0.0.7:50051 5 -> 8");
  }

  @Test
  void metadataChangeWithTheSameWeightIsAnUpdate() {
    assertThat(
            lines.changes(
                view(instance(B, 2)),
                view(new ServiceInstance(SERVICE, B, 2, Map.of("zone", "b")))))
        .containsExactly("updated 10.0.0.8:50051 weight=2 zone=b");
  }

  @Test
  void goneInstanceIsRemoved() {
    assertThat(lines.changes(view(instance(A, 5), instance(B, 2)), view(instance(B, 2))))
        .containsExactly("removed 10.0.0.7:50051");
  }

  @Test
  void sameViewAgainPrintsNothing() {
    // A value written again, a new revision, or only the staleness changed.
    assertThat(lines.changes(view(instance(A, 5)), view(instance(A, 5)))).isEmpty();
  }

  @Test
  void manyChangesAtOnceListRemovalsFirstThenInstancesByAddress() {
    // What a re-list after a compaction or an outage finds, all in one snapshot.
    String c = "10.0.0.9:50051";
    assertThat(
            lines.changes(
                view(instance(A, 5), instance(c, 2)),
                view(instance(A, 7), instance(B, 1))))
        .containsExactly(
            "removed 10.0.0.9:50051", "weight 10.0.0.7:50051 5 -> 7", "added 10.0.0.8:50051 weight=1");
  }

  @Test
  void newMalformedKeyPrintsItsReason() {
    assertThat(
            lines.changes(
                view(instance(A, 5)),
                view(List.of(instance(A, 5)),
                    List.of(malformed(key("bad"), "'pipe value: bad address 'nonsense''")))))
        .containsExactly("malformed /services/greeter/bad: pipe value: bad address 'nonsense'");
  }

  @Test
  void instanceWhoseValueTurnsUnreadablePrintsOnlyTheMalformedLine() {
    assertThat(
            lines.changes(
                view(instance(A, 5)),
                view(List.of(), List.of(malformed(key(A), "'empty value'")))))
        .containsExactly("malformed /services/greeter/10.0.0.7:50051: empty value");
  }

  @Test
  void repairedValuePrintsOnlyAdded() {
    assertThat(
            lines.changes(
                view(List.of(), List.of(malformed(key(A), "'empty value'"))),
                view(instance(A, 5))))
        .containsExactly("added 10.0.0.7:50051 weight=5");
  }

  @Test
  void deletedMalformedKeyIsRemovedByItsInstanceId() {
    assertThat(
            lines.changes(
                view(List.of(), List.of(malformed(key("bad"), "'empty value'"))),
                view(List.of(), List.of())))
        .containsExactly("removed bad");
  }

  @Test
  void malformedKeyWithAnotherReasonPrintsAgain() {
    assertThat(
            lines.changes(
                view(List.of(), List.of(malformed(key("bad"), "'empty value'"))),
                view(List.of(), List.of(malformed(key("bad"), "'value is not valid UTF-8'")))))
        .containsExactly("malformed /services/greeter/bad: value is not valid UTF-8");
  }

  @Test
  void unchangedMalformedKeyPrintsNothing() {
    WatchLines.View v = view(List.of(), List.of(malformed(key("bad"), "'empty value'")));
    assertThat(lines.changes(v, v)).isEmpty();
  }

  private String key(String id) {
    return layout.servicePrefix(SERVICE) + id;
  }

  private static ServiceInstance instance(String address, int weight) {
    return ServiceInstance.of(SERVICE, address, weight);
  }

  private static MalformedKey malformed(String key, String quotedReason) {
    return new MalformedKey(key, quotedReason);
  }

  private static WatchLines.View view(ServiceInstance... instances) {
    return view(List.of(instances), List.of());
  }

  private static WatchLines.View view(List<ServiceInstance> instances, List<MalformedKey> malformed) {
    return WatchLines.View.of(instances, malformed);
  }
}
