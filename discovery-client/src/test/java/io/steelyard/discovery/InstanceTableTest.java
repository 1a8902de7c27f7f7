package io.steelyard.discovery;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.ServiceInstance;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class InstanceTableTest {

  private static final String P = "/services/greeter/";
  private final AtomicLong malformed = new AtomicLong();
  private final InstanceTable table =
      new InstanceTable("greeter", KeyLayout.defaults(), "http://etcd:2379", malformed::incrementAndGet);

  private static byte[] v(String s) {
    return s.getBytes(UTF_8);
  }

  private java.util.List<ServiceInstance> instances() {
    return table.snapshot(1, null).instances();
  }

  @Test
  void putAddsAndWeightChangeReplaces() {
    assertThat(table.put(P + "10.0.0.1:1", v("10.0.0.1:1|5"), 2)).isTrue();
    assertThat(table.put(P + "10.0.0.1:1", v("10.0.0.1:1|7"), 3)).isTrue();
    assertThat(instances()).containsExactly(ServiceInstance.of("greeter", "10.0.0.1:1", 7));
  }

  @Test
  void rewritingTheSameValueIsNotAChange() {
    table.put(P + "a", v("10.0.0.1:1|5"), 2);
    assertThat(table.put(P + "a", v("10.0.0.1:1|5"), 3)).isFalse();
  }

  @Test
  void removeDropsTheInstance() {
    table.put(P + "a", v("10.0.0.1:1|5"), 2);
    assertThat(table.remove(P + "a")).isTrue();
    assertThat(table.remove(P + "a")).isFalse();
    assertThat(instances()).isEmpty();
  }

  @Test
  void malformedValuesAreSkippedAndCountedOncePerKeyVersion() {
    table.put(P + "good", v("10.0.0.9:9|1"), 2);
    byte[][] garbage = {
      {(byte) 0xff, (byte) 0xfe}, v("|"), v("10.0.0.1:1|-1"), v("10.0.0.1:1|abc"),
      v("10.0.0.1:1|99999999999999999999"), v("{\"Op\":0,\"Addr\":\"10.0"), new byte[1 << 20]
    };
    Arrays.fill(garbage[6], (byte) 'x');
    for (int i = 0; i < garbage.length; i++) {
      assertThat(table.put(P + "bad" + i, garbage[i], 10 + i)).as("a new malformed key is news").isTrue();
    }
    assertThat(malformed).hasValue(garbage.length);
    // A re-list sees the same versions again: no new warning, no new count, no change.
    for (int i = 0; i < garbage.length; i++) {
      assertThat(table.put(P + "bad" + i, garbage[i], 10 + i)).isFalse();
    }
    assertThat(malformed).hasValue(garbage.length);
    // A new version of a bad key counts again.
    table.put(P + "bad0", v("|"), 100);
    assertThat(malformed).hasValue(garbage.length + 1);
    assertThat(instances()).containsExactly(ServiceInstance.of("greeter", "10.0.0.9:9", 1));
  }

  @Test
  void aMalformedRewriteRemovesTheOldInstance() {
    table.put(P + "a", v("10.0.0.1:1|5"), 2);
    assertThat(table.put(P + "a", v("garbage|x"), 3)).isTrue();
    assertThat(instances()).isEmpty();
  }

  @Test
  void replaceAllDiffsAgainstTheKnownSet() {
    table.put(P + "a", v("10.0.0.1:1|1"), 2);
    table.put(P + "b", v("10.0.0.2:1|1"), 3);
    List<EtcdReader.KeyVersion> listing = List.of(
        new EtcdReader.KeyVersion(P + "b", v("10.0.0.2:1|1"), 3),
        new EtcdReader.KeyVersion(P + "c", v("10.0.0.3:1|4"), 9));
    assertThat(table.replaceAll(listing)).isTrue();
    assertThat(instances()).extracting(ServiceInstance::address).containsExactly("10.0.0.2:1", "10.0.0.3:1");
    assertThat(table.replaceAll(listing)).isFalse();
  }

  @Test
  void twoKeysForOneAddressYieldOneInstance() {
    table.put(P + "x", v("10.0.0.1:1|3"), 2);
    table.put(P + "y", v("10.0.0.1:1|8"), 3);
    assertThat(instances()).containsExactly(ServiceInstance.of("greeter", "10.0.0.1:1", 3));
  }

  @Test
  void aKeyNotNamedByItsAddressStillYieldsSortedUniqueAddressesFirstKeyWinning() {
    table.put(P + "10.0.0.1:1", v("10.0.0.1:1|1"), 2);
    table.put(P + "10.0.0.3:1", v("10.0.0.3:1|3"), 3);
    table.put(P + "zz-go-manager", v("10.0.0.2:1|2"), 4); // sorts last by key, second by address
    table.put(P + "zzz-duplicate", v("10.0.0.1:1|9"), 5); // same address as the first key
    assertThat(instances()).containsExactly(
        ServiceInstance.of("greeter", "10.0.0.1:1", 1),
        ServiceInstance.of("greeter", "10.0.0.2:1", 2),
        ServiceInstance.of("greeter", "10.0.0.3:1", 3));
  }

  @Test
  void anUnchangedViewIsTheSameListSoComparingSnapshotsIsCheap() {
    table.put(P + "10.0.0.1:1", v("10.0.0.1:1|1"), 2);
    Snapshot first = table.snapshot(2, null);
    table.put(P + "10.0.0.1:1", v("10.0.0.1:1|1"), 3); // rewritten as it was: no change
    Snapshot second = table.snapshot(3, null);
    assertThat(second.instances()).isSameAs(first.instances());
    assertThat(second.sameView(first)).isTrue();

    table.put(P + "10.0.0.1:1", v("10.0.0.1:1|4"), 4);
    Snapshot third = table.snapshot(4, null);
    assertThat(third.instances()).isNotSameAs(first.instances())
        .containsExactly(ServiceInstance.of("greeter", "10.0.0.1:1", 4));
    table.remove(P + "10.0.0.1:1");
    assertThat(table.snapshot(5, null).instances()).isEmpty();
  }

  @Test
  void keysOutsideThePrefixAreIgnored() {
    assertThat(table.put("/services/greeter2/a", v("10.0.0.1:1"), 2)).isFalse();
    assertThat(table.put(P, v("10.0.0.1:1"), 2)).isFalse();
    assertThat(instances()).isEmpty();
  }

  @Test
  void snapshotIsSortedByAddressAndCarriesJsonMetadata() {
    table.put(P + "z", v("10.0.0.2:1|1"), 2);
    table.put(P + "a", v("{\"Op\":0,\"Addr\":\"10.0.0.1:1\",\"Metadata\":{\"weight\":5,\"zone\":\"a\"}}"), 3);
    assertThat(instances()).containsExactly(
        new ServiceInstance("greeter", "10.0.0.1:1", 5, Map.of("zone", "a")),
        ServiceInstance.of("greeter", "10.0.0.2:1", 1));
  }

  @Test
  void malformedKeysAreListedSortedByKeyWithAQuotedReasonUntilDeletedOrRepaired() {
    table.put(P + "b", v("10.0.0.1:1|abc"), 2);
    table.put(P + "a\nforged", v("127.0.0.1:7\n|1"), 3);
    table.put(P + "good", v("10.0.0.9:9|1"), 4);
    Snapshot s = table.snapshot(4, null);
    assertThat(s.instances()).containsExactly(ServiceInstance.of("greeter", "10.0.0.9:9", 1));
    assertThat(s.malformed()).extracting(Snapshot.MalformedKey::key)
        .containsExactly(P + "a\nforged", P + "b");
    assertThat(s.malformed().get(1).reason())
        .isEqualTo("'pipe value: weight 'abc' (expected: an integer 0..1000000)'");
    assertThat(s.malformed()).allSatisfy(m -> assertThat(m.reason()).doesNotContain("\n").startsWith("'"));

    assertThat(table.put(P + "b", v("10.0.0.2:1|3"), 5)).isTrue(); // repaired
    assertThat(table.remove(P + "a\nforged")).isTrue(); // deleted
    assertThat(table.snapshot(6, null).malformed()).isEmpty();
  }

  @Test
  void aNewVersionOfAKeyWithTheSameReasonIsNoChange() {
    table.put(P + "b", v("10.0.0.1:1|abc"), 2);
    assertThat(table.put(P + "b", v("10.0.0.1:1|abc"), 3)).isFalse();
  }
}
