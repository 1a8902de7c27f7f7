package io.steelyard.it.faults;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.grpc.ManagedChannel;
import io.steelyard.registry.DecodedValue;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.ValueCodec;
import io.steelyard.testkit.EtcdCluster;
import java.io.ByteArrayOutputStream;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A few hundred generated and mutated values (seeded, so a failure replays) are written under the
 * service's prefix next to one real server while a real channel calls it. Every value the codec
 * rejects is skipped and counted exactly once per version, no call goes anywhere but the real
 * servers, and valid changes made afterwards still flow.
 */
@Tag("faults")
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class MalformedValuesIT {

  private static final Logger log = LoggerFactory.getLogger(MalformedValuesIT.class);
  private static final String SERVICE = "fuzz";
  private static final int VALUES = 300;
  private static final int KEYS = 40; // keys are rewritten: each version counts
  private static final long SEED = 0x5EED_2026L;

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build();

  private final Closer closer = new Closer();

  @AfterEach
  void closeAll() throws Exception {
    closer.close();
  }

  @Test
  void malformedValuesAreSkippedCountedOnceAndNeverCalled() throws Exception {
    FleetServer real = FleetServer.start(etcd.endpoints(), SERVICE, 1, Fleet.TTL);
    closer.add(real::shutdownNow);
    EtcdConnection connection = EtcdConnection.of(etcd.endpoints());
    ManagedChannel channel = Fleet.channel(connection, SERVICE);
    closer.add(() -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    ViewRecorder view = new ViewRecorder("client", connection, SERVICE);
    closer.add(view);
    Fleet.warmUp(channel, 1);
    PacedLoad load = PacedLoad.start("client", channel, Duration.ofMillis(10), Duration.ofSeconds(5));
    closer.add(load);
    long malformedBefore = view.malformed();

    Random random = new Random(SEED);
    int written = 0;
    int validSkipped = 0;
    try (Client writer = connection.connect()) {
      for (int i = 0; i < VALUES; i++) {
        byte[] value = mutated(random, real.address());
        if (ValueCodec.decode(value) instanceof DecodedValue.Accepted) {
          validSkipped++; // a mutation that still reads as an instance would be a real endpoint
          continue;
        }
        String key = KeyLayout.defaults().servicePrefix(SERVICE) + "junk-" + (i % KEYS);
        writer.getKVClient().put(ByteSequence.from(key, UTF_8), ByteSequence.from(value)).get(5, TimeUnit.SECONDS);
        written++;
      }
    }
    int expected = written;
    await().atMost(Duration.ofSeconds(30)).until(() -> view.malformed() - malformedBefore >= expected);
    assertThat(view.malformed() - malformedBefore).as("malformed values counted").isEqualTo(expected);
    assertThat(view.weights()).as("the view holds the real server only").isEqualTo(Map.of(real.address(), 1));

    // Later valid changes still flow: a weight change, then a second server that gets calls.
    real.setWeight(7);
    await().atMost(Duration.ofSeconds(10)).until(() -> Integer.valueOf(7).equals(view.weights().get(real.address())));
    FleetServer second = FleetServer.start(etcd.endpoints(), SERVICE, 1, Fleet.TTL);
    closer.add(second::shutdownNow);
    await().atMost(Duration.ofSeconds(15)).until(() -> load.callsTo(second.address()) >= 10);

    load.close();
    assertThat(load.failures()).as("failed calls").isEmpty();
    assertThat(load.callsByBackend().keySet()).as("every call went to a real server")
        .containsExactlyInAnyOrder(real.address(), second.address());
    assertThat(view.malformed() - malformedBefore).as("still exact: nothing counted twice").isEqualTo(expected);
    log.info("FIGURES fuzz seed={} generated={} written-malformed={} valid-skipped={} counted={} calls={}",
        SEED, VALUES, written, validSkipped, view.malformed() - malformedBefore, load.succeeded());
  }

  /** A value a registry might really hold, then mangled one to three ways. */
  static byte[] mutated(Random r, String address) {
    String[] seeds = {
      address + "|5",
      address,
      "{\"Op\":0,\"Addr\":\"" + address + "\",\"Metadata\":{\"weight\":5,\"zone\":\"a\"}}",
      "{\"Op\":0,\"Addr\":\"" + address + "\",\"Metadata\":null}",
    };
    byte[] v = seeds[r.nextInt(seeds.length)].getBytes(UTF_8);
    int mutations = 1 + r.nextInt(3);
    for (int m = 0; m < mutations; m++) {
      v = mutateOnce(r, v);
    }
    return v;
  }

  private static byte[] mutateOnce(Random r, byte[] v) {
    String[] badWeights = {"|-1", "|abc", "|99999999999999999999", "|1.5", "|", "||", "|1000001", "| 5", "|0x10"};
    String[] badJson = {"{", "[]", "null", "{\"Op\":1}", "{\"Op\":\"0\",\"Addr\":5}", "{\"Op\":0}", "\"str\""};
    switch (r.nextInt(9)) {
      case 0: // truncate, possibly to nothing
        return Arrays.copyOf(v, r.nextInt(v.length + 1));
      case 1: { // one byte to anything
        if (v.length == 0) {
          return new byte[] {(byte) r.nextInt(256)};
        }
        byte[] c = v.clone();
        c[r.nextInt(c.length)] = (byte) r.nextInt(256);
        return c;
      }
      case 2: { // insert random bytes
        int at = r.nextInt(v.length + 1);
        byte[] junk = new byte[1 + r.nextInt(5)];
        r.nextBytes(junk);
        return concat(Arrays.copyOf(v, at), junk, Arrays.copyOfRange(v, at, v.length));
      }
      case 3: // a weight that is not one
        return concat(new String(v, UTF_8).replaceAll("\\|.*$", "").getBytes(UTF_8),
            badWeights[r.nextInt(badWeights.length)].getBytes(UTF_8));
      case 4: // JSON of the wrong shape
        return badJson[r.nextInt(badJson.length)].getBytes(UTF_8);
      case 5: // not UTF-8
        return concat(v, new byte[] {(byte) 0xC3, (byte) 0x28});
      case 6: { // too big: over the codec's 16 KiB
        byte[] big = Arrays.copyOf(v, Math.max(v.length, ValueCodec.MAX_VALUE_BYTES + 1) + r.nextInt(1024));
        Arrays.fill(big, v.length, big.length, (byte) ' ');
        return big;
      }
      case 7: // control characters and separators
        return concat(v, new byte[] {'\n', (byte) r.nextInt(32), '|'});
      default: // doubled
        return concat(v, v);
    }
  }

  private static byte[] concat(byte[]... parts) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte[] p : parts) {
      out.writeBytes(p);
    }
    return out.toByteArray();
  }
}
