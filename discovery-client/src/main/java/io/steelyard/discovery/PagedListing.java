package io.steelyard.discovery;

import static com.google.common.base.Preconditions.checkArgument;
import static java.util.Objects.requireNonNull;

import io.steelyard.discovery.EtcdReader.KeyVersion;
import io.steelyard.discovery.EtcdReader.Listing;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.RegistryException.Kind;
import io.steelyard.registry.internal.EtcdErrors;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Lists every key under a prefix as one consistent snapshot, in pages small enough for every
 * message limit on the way: etcd range requests with a key limit, the first at etcd's current
 * revision and every following one at that same revision ({@code withRevision}), each continuing
 * just after the last key of the page before. A service of 100,000 instances is about 10 MB of
 * keys and values; in one response it passes gRPC's default 4 MiB inbound limit, and through
 * etcd's gRPC proxy its 1.5 MiB send limit ({@code --max-send-bytes}).
 *
 * <ul>
 *   <li>A page refused as too large ({@link Kind#LIMIT}) is asked again with half the keys, down to
 *       one; the smaller size holds for the rest of the listing. A single key that is still too
 *       large fails the listing with that LIMIT, so the watcher names the limit.
 *   <li>A page whose revision was compacted meanwhile ({@link Kind#COMPACTED}) restarts the
 *       listing at the current revision, at most {@value #MAX_RESTARTS} times.
 *   <li>Any other failure fails the listing; the watcher retries it.
 * </ul>
 *
 * <p>Continuation works on the raw key bytes, never on decoded strings: a key that is not valid
 * UTF-8 must not send the next page to the wrong place. Each listing is one instance; not
 * thread-safe, but its steps run one after the other on the page source's threads.
 */
final class PagedListing {

  private static final Logger logger = LoggerFactory.getLogger(PagedListing.class);

  /**
   * Keys per page to start with. A registry value is about 20-200 bytes and its key about 40-80,
   * so a page is some 0.3-1.4 MB: below both limits above for ordinary values, and 20 round trips
   * for a 100,000-instance service. Each round trip costs far more than its bytes on a busy
   * machine (100,000 keys took 4-9 s in pages of 1,000 and 0.8-2.5 s in pages of 5,000 at load
   * average 17-21 on 2 cores); larger values are halved down on the first refusal.
   */
  static final int DEFAULT_PAGE_KEYS = 5_000;

  /** Compactions during one listing after which it fails rather than starting again. */
  static final int MAX_RESTARTS = 3;

  /** One etcd range request, as the pager needs it. */
  interface Pages {
    /**
     * Keys in {@code [fromKey, endKey)} in key order, at most {@code limit}, at {@code revision}
     * (0: the current one). The future fails with a classified {@link RegistryException}.
     */
    CompletableFuture<Page> get(byte[] fromKey, byte[] endKey, long revision, int limit);
  }

  /**
   * One range response: its header revision, its keys, the raw bytes of its last key (null when
   * empty), and whether etcd has more keys in the range.
   */
  record Page(long revision, List<KeyVersion> keys, byte[] lastKey, boolean more) {
    Page {
      requireNonNull(keys, "keys");
    }
  }

  private final Pages pages;
  private final String prefix;
  private final byte[] start;
  private final byte[] end;
  private final CompletableFuture<Listing> result = new CompletableFuture<>();
  private final List<KeyVersion> keys = new ArrayList<>();
  private int pageKeys;
  private long revision; // 0 until the first page fixes it
  private final boolean fixedRevision; // listAt: a compaction fails the listing, no restart
  private int restarts;
  private int pageCount;

  private PagedListing(Pages pages, String prefix, int pageKeys, long revision) {
    this.pages = pages;
    this.prefix = prefix;
    this.start = prefix.getBytes(StandardCharsets.UTF_8);
    this.end = prefixEnd(start);
    this.pageKeys = pageKeys;
    this.revision = revision;
    this.fixedRevision = revision != 0;
  }

  /** Lists {@code prefix} (which ends with {@code /}) in pages of at most {@code pageKeys} keys. */
  static CompletableFuture<Listing> list(Pages pages, String prefix, int pageKeys) {
    return start(pages, prefix, pageKeys, 0);
  }

  /**
   * Lists {@code prefix} as it was at {@code revision}, every page at that revision. A compaction
   * of it fails the listing with {@link Kind#COMPACTED} (there is nothing to start again from).
   */
  static CompletableFuture<Listing> listAt(Pages pages, String prefix, long revision, int pageKeys) {
    checkArgument(revision > 0, "revision: %s (expected: > 0)", revision);
    return start(pages, prefix, pageKeys, revision);
  }

  private static CompletableFuture<Listing> start(
      Pages pages, String prefix, int pageKeys, long revision) {
    requireNonNull(pages, "pages");
    checkArgument(prefix.endsWith("/"), "prefix: %s (expected: ends with /)", prefix);
    checkArgument(pageKeys >= 1, "pageKeys: %s (expected: >= 1)", pageKeys);
    PagedListing listing = new PagedListing(pages, prefix, pageKeys, revision);
    listing.fetch(listing.start);
    return listing.result;
  }

  private void fetch(byte[] from) {
    CompletableFuture<Page> page;
    try {
      page = pages.get(from, end, revision, pageKeys);
    } catch (RuntimeException e) { // a closed client throws synchronously
      result.completeExceptionally(e);
      return;
    }
    page.whenComplete((p, err) -> {
      if (err != null) {
        failed(from, err);
      } else {
        received(p);
      }
    });
  }

  private void received(Page page) {
    if (revision == 0) {
      revision = page.revision();
    }
    pageCount++;
    keys.addAll(page.keys());
    if (page.more() && page.lastKey() != null) {
      fetch(after(page.lastKey()));
      return;
    }
    if (pageCount > 1) {
      logger.debug("Listed {} in {} pages of at most {} keys at revision {}",
          prefix, pageCount, pageKeys, revision);
    }
    result.complete(new Listing(revision, keys));
  }

  private void failed(byte[] from, Throwable err) {
    Kind kind = EtcdErrors.classify(err);
    if (kind == Kind.LIMIT && pageKeys > 1) {
      pageKeys = Math.max(1, pageKeys / 2);
      logger.debug("A page of {} was over a size limit; asking again with {} keys", prefix, pageKeys);
      fetch(from);
      return;
    }
    if (kind == Kind.COMPACTED && !fixedRevision && revision != 0 && restarts < MAX_RESTARTS) {
      restarts++;
      logger.debug("Revision {} of the listing of {} was compacted after {} pages; starting again",
          revision, prefix, pageCount);
      keys.clear();
      revision = 0;
      pageCount = 0;
      fetch(start);
      return;
    }
    result.completeExceptionally(err);
  }

  /** The smallest key after {@code key}: the next page starts there. */
  private static byte[] after(byte[] key) {
    return Arrays.copyOf(key, key.length + 1); // appends 0x00
  }

  /** The end of the range of keys starting with {@code prefix} (exclusive). */
  static byte[] prefixEnd(byte[] prefix) {
    byte[] end = Arrays.copyOf(prefix, prefix.length);
    for (int i = end.length - 1; i >= 0; i--) {
      if (end[i] != (byte) 0xff) {
        end[i]++;
        return Arrays.copyOf(end, i + 1);
      }
    }
    return new byte[] {0}; // all 0xff: to the end of the key space
  }
}
