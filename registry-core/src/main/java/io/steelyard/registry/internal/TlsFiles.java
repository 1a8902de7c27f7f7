package io.steelyard.registry.internal;

import static java.util.Objects.requireNonNull;

import com.google.common.annotations.VisibleForTesting;
import com.google.common.base.Ticker;
import com.google.common.hash.Hasher;
import com.google.common.hash.Hashing;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.cert.X509Certificate;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import javax.annotation.Nullable;
import javax.annotation.concurrent.GuardedBy;
import javax.net.ssl.X509ExtendedKeyManager;
import javax.net.ssl.X509ExtendedTrustManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The CA, certificate and key files of a TLS connection, read again whenever they change: every
 * new connection (each TLS handshake) uses what the files hold at that moment. For etcd's
 * clients the files are the CA to trust and the client certificate; for a server that checks
 * its clients (the xDS control plane's mutual TLS) they are the clients' CA and the server's own
 * certificate, through the same {@link #keyManager()} and {@link #trustManager()}; for a server
 * that checks no client certificate, only its own certificate and key (no CA file).
 *
 * <p><b>How a change is seen.</b> Whenever the material is asked for (a handshake, a failed call
 * being named, a meter being read) and the last look is at least {@link #RECHECK} old by the
 * injected {@link Ticker}, the files are read and their contents hashed; a different hash
 * is a change. Reading contents rather than watching the directory catches what a {@code
 * WatchService} misses: Kubernetes updates a secret volume by pointing the {@code ..data}
 * symlink at a new directory in one rename, and the file paths, themselves symlinks through
 * {@code ..data}, never change.
 *
 * <p><b>Half-written files.</b> Changed files are used only if they are consistent ({@link
 * TlsMaterial#parse}: every PEM parses, the key is the certificate's). As the three files are
 * read one after the other, an unusable read is read again at once: a swap between two reads
 * mixes two generations though neither is wrong, and is not reported. If the second read is
 * unusable too, the last good material stays, the reason is logged once per content (at WARN),
 * counted in {@link #failedReloads()}, and the files are looked at again on the next check, so a writer that
 * finishes the pair a moment later is picked up.
 *
 * <p><b>One per set of files.</b> {@link #of} hands out one instance per (CA, cert, key) paths,
 * made absolute, per process, so that every client built for them, and the meters, share one
 * view; {@link #all()} lists them for {@code CertificateMetrics}.
 *
 * <p>Thread-safe: the current material is a volatile read; a check runs under the lock.
 */
public final class TlsFiles {

  /** How old the last look at the files may be before they are read again. */
  static final Duration RECHECK = Duration.ofSeconds(1);

  private static final Logger logger = LoggerFactory.getLogger(TlsFiles.class);

  /**
   * Process-wide, as the files are: every client of the process built for the same paths (the
   * agent's, the resolver's, a renewed one) must see the same material and count each reload
   * once, and the meters must find them without each part passing its connection along (as
   * discovery's shared watch registry). A handful of entries per process, never removed.
   */
  private static final Map<List<Path>, TlsFiles> SHARED = new ConcurrentHashMap<>();
  private static final List<Consumer<TlsFiles>> LISTENERS = new CopyOnWriteArrayList<>();

  @Nullable private final Path caFile;
  @Nullable private final Path certFile;
  @Nullable private final Path keyFile;
  private final Ticker ticker;
  private final Clock clock;
  private final FileReader fileReader;
  private final X509ExtendedKeyManager keyManager = new TlsFilesManagers.KeyManager(this);
  private final X509ExtendedTrustManager trustManager = new TlsFilesManagers.TrustManager(this);

  @Nullable private volatile Version loaded;

  /**
   * The material {@link #loaded} replaced, kept for a handshake that chose its alias before the
   * reload and asks for the chain and key after it.
   */
  @Nullable private volatile Version previousLoaded;

  @Nullable private volatile String problem;

  @GuardedBy("this")
  private boolean checked;

  @GuardedBy("this")
  private long checkedAtNanos;

  @GuardedBy("this")
  @Nullable
  private String lastBadHash;

  @GuardedBy("this")
  private long reloads;

  @GuardedBy("this")
  private long failedReloads;

  /** Material with its content hash and a generation that names it as a key alias. */
  record Version(TlsMaterial material, String hash, long generation) {
    String alias() {
      return "steelyard-" + generation;
    }
  }

  /** How the files are read; a test puts a writer between two reads. */
  @VisibleForTesting
  interface FileReader {
    byte[] read(Path file) throws IOException;
  }

  @VisibleForTesting
  TlsFiles(@Nullable Path caFile, @Nullable Path certFile, @Nullable Path keyFile, Ticker ticker, Clock clock) {
    this(caFile, certFile, keyFile, ticker, clock, Files::readAllBytes);
  }

  @VisibleForTesting
  TlsFiles(
      @Nullable Path caFile,
      @Nullable Path certFile,
      @Nullable Path keyFile,
      Ticker ticker,
      Clock clock,
      FileReader fileReader) {
    this.fileReader = requireNonNull(fileReader, "fileReader");
    this.caFile = caFile;
    this.certFile = certFile;
    this.keyFile = keyFile;
    this.ticker = requireNonNull(ticker, "ticker");
    this.clock = requireNonNull(clock, "clock");
  }

  /**
   * The process's one instance for these files: cert and key both or neither, and the CA, the
   * pair or both (a server that checks no client certificate has no CA file). Paths are
   * made absolute and normalised first, so {@code ca.pem} and {@code /etc/steelyard/ca.pem} name
   * one instance, measured and tagged once. (Symlinks are not resolved: a Kubernetes mount's
   * paths stay the same while what they point at changes.)
   */
  public static TlsFiles of(@Nullable Path caFile, @Nullable Path certFile, @Nullable Path keyFile) {
    if ((certFile == null) != (keyFile == null) || (caFile == null && certFile == null)) {
      throw new IllegalArgumentException(
          "tls: ca " + caFile + ", cert " + certFile + ", key " + keyFile
              + " (expected: a CA file, a certificate with its key, or both)");
    }
    Path ca = caFile == null ? null : normalize(caFile);
    Path cert = certFile == null ? null : normalize(certFile);
    Path key = keyFile == null ? null : normalize(keyFile);
    boolean[] created = {false};
    TlsFiles files =
        SHARED.computeIfAbsent(
            java.util.Arrays.asList(ca, cert, key),
            k -> {
              created[0] = true;
              return new TlsFiles(ca, cert, key, Ticker.systemTicker(), Clock.systemUTC());
            });
    if (created[0]) {
      LISTENERS.forEach(l -> l.accept(files));
    }
    return files;
  }

  private static Path normalize(Path file) {
    return file.toAbsolutePath().normalize();
  }

  /** Every instance {@link #of} has handed out in this process. */
  public static List<TlsFiles> all() {
    return List.copyOf(SHARED.values());
  }

  /** Calls {@code listener} with each instance {@link #of} creates from now on. */
  public static void onCreated(Consumer<TlsFiles> listener) {
    LISTENERS.add(requireNonNull(listener, "listener"));
  }

  /** Stops calling {@code listener}. */
  public static void removeListener(Consumer<TlsFiles> listener) {
    LISTENERS.remove(listener);
  }

  /** The CA file, or null for a server's own certificate and key alone. */
  @Nullable
  public Path caFile() {
    return caFile;
  }

  @Nullable
  public Path certFile() {
    return certFile;
  }

  /**
   * Makes sure usable material has been read (reading the files if it is time to).
   *
   * @throws IllegalArgumentException naming the file at fault when the files have never been
   *     usable
   */
  public void require() {
    check();
    if (loaded == null) {
      throw new IllegalArgumentException("tls: " + problem);
    }
  }

  /** Serves the current client certificate and key to every handshake. */
  public X509ExtendedKeyManager keyManager() {
    return keyManager;
  }

  /** Trusts the current CA certificates in every handshake (none without a CA file). */
  public X509ExtendedTrustManager trustManager() {
    return trustManager;
  }

  /** The current client certificate's not-after (null without mutual TLS or material). */
  @Nullable
  public Instant clientNotAfter() {
    Version l = current();
    return l == null ? null : l.material().clientNotAfter();
  }

  /** The earliest not-after of the current CA certificates (null before any material or CA). */
  @Nullable
  public Instant caNotAfter() {
    Version l = current();
    return l == null ? null : l.material().caNotAfter();
  }

  /** How often changed, usable files replaced the material. */
  public synchronized long reloads() {
    check();
    return reloads;
  }

  /** How many distinct contents of the files were not usable and were ignored. */
  public synchronized long failedReloads() {
    check();
    return failedReloads;
  }

  /**
   * Names the client certificate for an error message, e.g. {@code /etc/steelyard/client.pem (not
   * after 2026-12-02T01:30:00Z, expired)}; null without mutual TLS.
   */
  @Nullable
  public String describeClientCertificate() {
    Instant notAfter = clientNotAfter();
    if (notAfter == null) {
      return null;
    }
    String state = clientCertificateValidNow() ? "" : notValidWhy();
    return certFile + " (not after " + notAfter + state + ")";
  }

  /** Whether the current client certificate is within its validity by the clock. */
  public boolean clientCertificateValidNow() {
    Version l = current();
    if (l == null || l.material().chain() == null) {
      return true;
    }
    X509Certificate leaf = l.material().chain()[0];
    Instant now = clock.instant();
    return !now.isAfter(leaf.getNotAfter().toInstant()) && !now.isBefore(leaf.getNotBefore().toInstant());
  }

  /**
   * The material in use or the one it replaced, if {@code alias} names either, without looking at
   * the files; null otherwise.
   */
  @Nullable
  Version byAlias(String alias) {
    // check() writes previousLoaded before loaded, so reading loaded first, a reader asking for
    // the generation just replaced finds it in one of the two.
    Version l = loaded;
    if (l != null && l.alias().equals(alias)) {
      return l;
    }
    Version p = previousLoaded;
    if (p != null && p.alias().equals(alias)) {
      return p;
    }
    return null;
  }

  /** Why the files are not usable, or null. */
  @Nullable
  String problem() {
    return problem;
  }

  private String notValidWhy() {
    Version l = requireNonNull(current());
    X509Certificate leaf = requireNonNull(l.material().chain())[0];
    return clock.instant().isBefore(leaf.getNotBefore().toInstant())
        ? ", not valid before " + leaf.getNotBefore().toInstant()
        : ", expired";
  }

  /** The material in use, after reading the files if it is time to; null if never usable. */
  @Nullable
  Version current() {
    check();
    return loaded;
  }

  /** Reads the files again if the last look is {@link #RECHECK} old (or there was none). */
  @VisibleForTesting
  synchronized void check() {
    long now = ticker.read();
    if (checked && now - checkedAtNanos < RECHECK.toNanos()) {
      return;
    }
    checked = true;
    checkedAtNanos = now;
    Read r = read();
    if (r.material() == null && !r.hash().equals(lastBadHash)) {
      // The files are read one after the other: a writer that replaces them all at once (the
      // ..data symlink swap) between two reads yields a CA, certificate and key of two
      // generations, none of them wrong on disk. A second read straight away sees one generation.
      r = read();
    }
    if (r.material() == null) {
      rejected(r.hash(), requireNonNull(r.why()));
      return;
    }
    Version old = loaded;
    lastBadHash = null;
    problem = null;
    if (old != null && old.hash().equals(r.hash())) {
      return; // unchanged, or back to what is in use
    }
    previousLoaded = old;
    loaded = new Version(r.material(), r.hash(), old == null ? 0 : old.generation() + 1);
    if (old != null) {
      reloads++;
      logger.info(
          "Using the changed TLS files {} for new connections (certificate not after {})",
          this, r.material().clientNotAfter());
    }
  }

  /** One read of the files: their hash, and their material or why they are not usable. */
  private record Read(String hash, @Nullable TlsMaterial material, @Nullable String why) {}

  @GuardedBy("this")
  private Read read() {
    byte[] ca = null;
    byte[] cert = null;
    byte[] key = null;
    try {
      if (caFile != null) {
        ca = fileReader.read(caFile);
      }
      if (certFile != null) {
        cert = fileReader.read(certFile);
        key = fileReader.read(requireNonNull(keyFile));
      }
    } catch (NoSuchFileException e) {
      return new Read("missing", null, e.getFile() + " does not exist");
    } catch (IOException e) {
      return new Read("unreadable", null, "cannot read the TLS files (" + e + ")");
    }
    String hash = hash(ca, cert, key);
    Version old = loaded;
    if (old != null && old.hash().equals(hash)) {
      return new Read(hash, old.material(), null);
    }
    if (hash.equals(lastBadHash)) {
      return new Read(hash, null, problem);
    }
    try {
      return new Read(hash, TlsMaterial.parse(caFile, ca, certFile, cert, keyFile, key), null);
    } catch (TlsMaterial.UnusableException e) {
      return new Read(hash, null, e.getMessage());
    }
  }

  @GuardedBy("this")
  private void rejected(String hash, String why) {
    if (hash.equals(lastBadHash)) {
      return;
    }
    lastBadHash = hash;
    problem = why;
    failedReloads++;
    if (loaded != null) {
      logger.warn("Ignoring the changed TLS files for now, keeping the last good ones: {}", why);
    }
  }

  private static String hash(@Nullable byte[] ca, @Nullable byte[] cert, @Nullable byte[] key) {
    Hasher h = Hashing.sha256().newHasher();
    for (byte[] b : new byte[][] {ca, cert, key}) {
      h.putInt(b == null ? -1 : b.length);
      if (b != null) {
        h.putBytes(b);
      }
    }
    return h.hash().toString();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof TlsFiles f
        && Objects.equals(f.caFile, caFile)
        && Objects.equals(f.certFile, certFile)
        && Objects.equals(f.keyFile, keyFile);
  }

  @Override
  public int hashCode() {
    return Objects.hash(caFile, certFile, keyFile);
  }

  @Override
  public String toString() {
    if (certFile == null) {
      return "[ca " + caFile + "]";
    }
    return (caFile == null ? "[" : "[ca " + caFile + ", ") + "cert " + certFile + ", key " + keyFile + "]";
  }
}
