package io.steelyard.registry;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.statistics.Statistics;

/**
 * No value, random or mutated from a valid one, makes {@link ValueCodec#decode} throw; every
 * accepted value round-trips through {@link ValueCodec#encode} in its own format. Together the
 * properties below try well over 100,000 values per run.
 */
class ValueCodecPropertiesTest {

  private static final int TRIES = 40_000;

  @Property(tries = TRIES)
  void randomBytesNeverThrowAndAcceptedValuesRoundTrip(@ForAll("randomBytes") byte[] value) {
    checkDecodes(value);
  }

  @Property(tries = TRIES)
  void mutatedValidValuesNeverThrowAndAcceptedValuesRoundTrip(
      @ForAll("mutatedValues") byte[] value) {
    boolean accepted = checkDecodes(value);
    Statistics.collect(accepted ? "accepted" : "rejected");
    // Both outcomes must be exercised, or the round-trip half of this property proves nothing.
    Statistics.coverage(
        c -> {
          c.check("accepted").percentage(p -> p > 5);
          c.check("rejected").percentage(p -> p > 5);
        });
  }

  @Property(tries = TRIES)
  void validInstancesRoundTripInEveryFormatThatCanCarryThem(
      @ForAll("instances") ServiceInstance instance, @ForAll ValueFormat format) {
    if (format == ValueFormat.PLAIN && (instance.weight() != 1 || !instance.metadata().isEmpty())) {
      return;
    }
    if (format == ValueFormat.PIPE && !instance.metadata().isEmpty()) {
      return;
    }
    DecodedValue d = ValueCodec.decode(ValueCodec.encode(instance, format));
    assertThat(d).isInstanceOf(DecodedValue.Accepted.class);
    DecodedValue.Accepted a = (DecodedValue.Accepted) d;
    assertThat(a.format()).isEqualTo(format);
    assertThat(a.toInstance(instance.service())).isEqualTo(instance);
  }

  private static boolean checkDecodes(byte[] value) {
    DecodedValue d = ValueCodec.decode(value); // must not throw
    assertThat(d).isNotNull();
    if (d instanceof DecodedValue.Accepted a) {
      byte[] again = ValueCodec.encode(a.toInstance("svc"), a.format());
      assertThat(ValueCodec.decode(again)).isEqualTo(a);
      return true;
    }
    assertThat(((DecodedValue.Rejected) d).reason()).isNotBlank();
    return false;
  }

  @Provide
  Arbitrary<byte[]> randomBytes() {
    Arbitrary<byte[]> raw = Arbitraries.bytes().array(byte[].class).ofMaxSize(200);
    Arbitrary<byte[]> text =
        Arbitraries.strings()
            .withChars("0123456789.:|[]{}\",abcdefhlostOpAdrMeaw -\\u")
            .ofMaxLength(80)
            .map(s -> s.getBytes(StandardCharsets.UTF_8));
    return Arbitraries.oneOf(raw, text);
  }

  @Provide
  Arbitrary<ServiceInstance> instances() {
    Arbitrary<String> host =
        Arbitraries.oneOf(
            Arbitraries.integers().between(0, 255).list().ofSize(4).map(l ->
                l.get(0) + "." + l.get(1) + "." + l.get(2) + "." + l.get(3)),
            Arbitraries.strings().withCharRange('a', 'z').ofMinLength(1).ofMaxLength(20),
            Arbitraries.of("[::1]", "[2001:db8::7]", "[fe80::1%eth0]"));
    Arbitrary<String> address =
        Combinators.combine(host, Arbitraries.integers().between(1, 65535)).as((h, p) -> h + ":" + p);
    Arbitrary<Integer> weight =
        Arbitraries.oneOf(Arbitraries.integers().between(0, 10), Arbitraries.integers().between(0, 1_000_000));
    Arbitrary<Map<String, String>> metadata =
        Arbitraries.maps(
                Arbitraries.strings().ofMinLength(1).ofMaxLength(10).filter(k -> !k.equals("weight")),
                Arbitraries.strings().ofMaxLength(20))
            .ofMaxSize(4);
    return Combinators.combine(address, weight, metadata)
        .as((a, w, m) -> new ServiceInstance("svc", a, w, m));
  }

  @Provide
  Arbitrary<byte[]> mutatedValues() {
    Arbitrary<byte[]> valid =
        Combinators.combine(instances(), Arbitraries.of(ValueFormat.PIPE, ValueFormat.JSON))
            .as((i, f) -> f == ValueFormat.PIPE ? i.address() + "|" + i.weight() : ValueCodec.encodeToString(i, f))
            .map(s -> s.getBytes(StandardCharsets.UTF_8));
    Arbitrary<Tuple.Tuple3<Integer, Integer, Byte>> mutation =
        Combinators.combine(
                Arbitraries.integers().between(0, 4),
                Arbitraries.integers().between(0, 10_000),
                Arbitraries.bytes())
            .as(Tuple::of);
    return Combinators.combine(valid, mutation.list().ofMinSize(1).ofMaxSize(4))
        .as(
            (bytes, muts) -> {
              byte[] b = bytes;
              for (Tuple.Tuple3<Integer, Integer, Byte> m : muts) {
                b = mutate(b, m.get1(), m.get2(), m.get3());
              }
              return b;
            });
  }

  private static byte[] mutate(byte[] b, int kind, int where, byte with) {
    if (b.length == 0) {
      return new byte[] {with};
    }
    int i = where % b.length;
    switch (kind) {
      case 0: { // flip a byte
        byte[] c = b.clone();
        c[i] = with;
        return c;
      }
      case 1: { // delete a byte
        byte[] c = new byte[b.length - 1];
        System.arraycopy(b, 0, c, 0, i);
        System.arraycopy(b, i + 1, c, i, b.length - i - 1);
        return c;
      }
      case 2: { // insert a byte
        byte[] c = new byte[b.length + 1];
        System.arraycopy(b, 0, c, 0, i);
        c[i] = with;
        System.arraycopy(b, i, c, i + 1, b.length - i);
        return c;
      }
      case 3: // truncate
        return java.util.Arrays.copyOf(b, i);
      default: { // insert a structural character
        byte[] structural = "{}[]\":,|\\".getBytes(StandardCharsets.UTF_8);
        byte[] c = new byte[b.length + 1];
        System.arraycopy(b, 0, c, 0, i);
        c[i] = structural[Math.floorMod(with, structural.length)];
        System.arraycopy(b, i, c, i + 1, b.length - i);
        return c;
      }
    }
  }
}
