package io.steelyard.discovery;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/** Blocking etcd writes for tests, bounded so a dead etcd fails the test instead of hanging it. */
final class Etcd {
  private Etcd() {}

  static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }

  static long put(Client c, String key, String value) {
    return put(c, key, value.getBytes(StandardCharsets.UTF_8));
  }

  static long put(Client c, String key, byte[] value) {
    try {
      return c.getKVClient().put(bytes(key), ByteSequence.from(value)).get(10, TimeUnit.SECONDS)
          .getHeader().getRevision();
    } catch (Exception e) {
      throw new AssertionError("put " + key + " failed", e);
    }
  }

  static long delete(Client c, String key) {
    try {
      return c.getKVClient().delete(bytes(key)).get(10, TimeUnit.SECONDS).getHeader().getRevision();
    } catch (Exception e) {
      throw new AssertionError("delete " + key + " failed", e);
    }
  }

  static void compact(Client c, long revision) {
    try {
      c.getKVClient().compact(revision).get(10, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new AssertionError("compact " + revision + " failed", e);
    }
  }
}
