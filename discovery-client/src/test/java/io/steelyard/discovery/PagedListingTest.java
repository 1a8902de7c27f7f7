package io.steelyard.discovery;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.steelyard.discovery.EtcdReader.KeyVersion;
import io.steelyard.discovery.EtcdReader.Listing;
import io.steelyard.discovery.PagedListing.Page;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.RegistryException.Kind;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * The pager's rules against a fake of its own seam (one range request). That the pages of a real
 * etcd form one snapshot, even while it is written and compacted, is {@code LargeListingIT}'s.
 */
class PagedListingTest {

  private static final String PREFIX = "/services/big/";

  /** A key space in byte order, answering range requests and recording them. */
  private static final class FakePages implements PagedListing.Pages {
    final TreeMap<byte[], String> keys = new TreeMap<>(Arrays::compareUnsigned);
    final List<String> requests = new ArrayList<>();
    long currentRevision = 50;
    /** Decides the fate of a request before it is served: null serves it. */
    Function<Integer, RegistryException> failure = limit -> null;

    void put(String key) {
      keys.put(key.getBytes(UTF_8), key + "|1");
    }

    @Override
    public CompletableFuture<Page> get(byte[] fromKey, byte[] endKey, long revision, int limit) {
      requests.add(new String(fromKey, UTF_8).replace("\0", "\\0") + "@" + revision + "x" + limit);
      RegistryException e = failure.apply(limit);
      if (e != null) {
        return CompletableFuture.failedFuture(e);
      }
      List<KeyVersion> out = new ArrayList<>();
      byte[] last = null;
      boolean more = false;
      for (Map.Entry<byte[], String> kv : keys.subMap(fromKey, true, endKey, false).entrySet()) {
        if (out.size() == limit) {
          more = true;
          break;
        }
        out.add(new KeyVersion(new String(kv.getKey(), UTF_8), kv.getValue().getBytes(UTF_8), 7));
        last = kv.getKey();
      }
      return CompletableFuture.completedFuture(
          new Page(revision == 0 ? currentRevision : revision, out, last, more));
    }
  }

  private static Listing list(FakePages pages, int pageKeys) throws Exception {
    return PagedListing.list(pages, PREFIX, pageKeys).get();
  }

  private static List<String> keysOf(Listing listing) {
    return listing.keys().stream().map(KeyVersion::key).toList();
  }

  private static FakePages withKeys(int n) {
    FakePages pages = new FakePages();
    for (int i = 0; i < n; i++) {
      pages.put(PREFIX + String.format("10.0.0.%03d:1", i));
    }
    pages.put("/services/big0/outside:1"); // just past the prefix's range
    pages.put("/services/bif/outside:1"); // just before it
    return pages;
  }

  @Test
  void listsEveryKeyInPagesAllAtTheFirstPagesRevision() throws Exception {
    FakePages pages = withKeys(25);
    Listing listing = list(pages, 10);
    assertThat(listing.revision()).isEqualTo(50);
    assertThat(keysOf(listing)).hasSize(25).first().isEqualTo(PREFIX + "10.0.0.000:1");
    assertThat(keysOf(listing)).last().isEqualTo(PREFIX + "10.0.0.024:1");
    assertThat(pages.requests).containsExactly(
        PREFIX + "@0x10",
        PREFIX + "10.0.0.009:1\\0@50x10",
        PREFIX + "10.0.0.019:1\\0@50x10");
  }

  @Test
  void anEmptyPrefixIsOneRequest() throws Exception {
    FakePages pages = withKeys(0);
    assertThat(keysOf(list(pages, 10))).isEmpty();
    assertThat(pages.requests).hasSize(1);
  }

  @Test
  void aPageOverASizeLimitIsAskedAgainWithHalfTheKeysForTheRestOfTheListing() throws Exception {
    FakePages pages = withKeys(25);
    pages.failure = limit -> limit > 4 ? new RegistryException(Kind.LIMIT, "too large", null) : null;
    Listing listing = list(pages, 16);
    assertThat(keysOf(listing)).hasSize(25);
    assertThat(pages.requests).startsWith(PREFIX + "@0x16", PREFIX + "@0x8", PREFIX + "@0x4",
        PREFIX + "10.0.0.003:1\\0@50x4");
    assertThat(pages.requests).hasSize(2 + 7); // two refused, then 7 pages of at most 4 keys
  }

  @Test
  void oneKeyStillOverTheLimitFailsTheListingWithThatLimit() {
    FakePages pages = withKeys(3);
    RegistryException tooLarge = new RegistryException(Kind.LIMIT, "message exceeds maximum size", null);
    pages.failure = limit -> tooLarge;
    CompletableFuture<Listing> listing = PagedListing.list(pages, PREFIX, 4);
    assertThat(listing).isCompletedExceptionally();
    assertThat(failureOf(listing)).isSameAs(tooLarge);
    assertThat(pages.requests).containsExactly(PREFIX + "@0x4", PREFIX + "@0x2", PREFIX + "@0x1");
  }

  @Test
  void aCompactionBetweenPagesStartsTheListingAgainAtTheCurrentRevision() throws Exception {
    FakePages pages = withKeys(25);
    int[] calls = {0};
    pages.failure = limit -> {
      if (++calls[0] == 2) { // the second page: its revision is gone
        pages.currentRevision = 60;
        return new RegistryException(Kind.COMPACTED, "compacted", null);
      }
      return null;
    };
    Listing listing = list(pages, 10);
    assertThat(listing.revision()).isEqualTo(60);
    assertThat(keysOf(listing)).hasSize(25).doesNotHaveDuplicates();
    assertThat(pages.requests).containsExactly(
        PREFIX + "@0x10",
        PREFIX + "10.0.0.009:1\\0@50x10",
        PREFIX + "@0x10",
        PREFIX + "10.0.0.009:1\\0@60x10",
        PREFIX + "10.0.0.019:1\\0@60x10");
  }

  @Test
  void compactionsOverAndOverFailTheListingAfterAFewRestarts() {
    FakePages pages = withKeys(25);
    RegistryException compacted = new RegistryException(Kind.COMPACTED, "compacted", null);
    int[] calls = {0};
    pages.failure = limit -> ++calls[0] % 2 == 0 ? compacted : null; // every second page
    CompletableFuture<Listing> listing = PagedListing.list(pages, PREFIX, 10);
    assertThat(failureOf(listing)).isSameAs(compacted);
    assertThat(pages.requests).hasSize(2 * (PagedListing.MAX_RESTARTS + 1));
  }

  @Test
  void anyOtherFailureFailsTheListingAtOnce() {
    FakePages pages = withKeys(25);
    RegistryException down = new RegistryException(Kind.UNAVAILABLE, "unreachable", null);
    pages.failure = limit -> pages.requests.size() == 2 ? down : null;
    assertThat(failureOf(PagedListing.list(pages, PREFIX, 10))).isSameAs(down);
    assertThat(pages.requests).hasSize(2);
  }

  @Test
  void theNextPageStartsAfterTheLastKeysRawBytesEvenWhenTheyAreNotUtf8() throws Exception {
    FakePages pages = new FakePages();
    byte[] prefix = PREFIX.getBytes(UTF_8);
    for (int b : new int[] {0x41, 0xc3, 0xff, 0xfe}) { // 0xc3, 0xff, 0xfe: not UTF-8 on their own
      byte[] key = Arrays.copyOf(prefix, prefix.length + 1);
      key[prefix.length] = (byte) b;
      pages.keys.put(key, "x");
    }
    Listing listing = list(pages, 1);
    assertThat(listing.keys()).hasSize(4);
    assertThat(pages.requests).hasSize(4);
  }

  @Test
  void prefixEndIsTheNextKeyAfterEveryKeyWithThePrefix() {
    assertThat(PagedListing.prefixEnd("/a/".getBytes(UTF_8))).isEqualTo("/a0".getBytes(UTF_8));
    assertThat(PagedListing.prefixEnd(new byte[] {1, (byte) 0xff})).isEqualTo(new byte[] {2});
    assertThat(PagedListing.prefixEnd(new byte[] {(byte) 0xff})).isEqualTo(new byte[] {0});
  }

  private static Throwable failureOf(CompletableFuture<?> f) {
    try {
      f.get();
      throw new AssertionError("expected a failure");
    } catch (ExecutionException e) {
      return e.getCause();
    } catch (InterruptedException e) {
      throw new AssertionError(e);
    }
  }
}
