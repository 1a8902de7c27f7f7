package io.steelyard.xds;

import static java.util.Objects.requireNonNull;

import com.google.common.annotations.VisibleForTesting;
import com.google.common.base.Ticker;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import javax.annotation.concurrent.GuardedBy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code --authorize} file, read again when it changes. The file must parse at start ({@link
 * #load} throws, naming the file and the line); later, whenever the grants are asked for and the
 * last look is at least {@link #RECHECK} old, its contents are read and, if they differ, parsed.
 * Contents that do not parse (a half-written file, a typo) keep the last good grants, with one
 * WARN per content; a file that parses again is taken up.
 *
 * <p>Thread-safe.
 */
final class GrantsFile {

  static final Duration RECHECK = Duration.ofSeconds(1);

  private static final Logger log = LoggerFactory.getLogger(GrantsFile.class);

  private final Path file;
  private final Ticker ticker;
  private volatile Grants grants;

  @GuardedBy("this")
  private String contents;

  @GuardedBy("this")
  private long checkedAtNanos;

  @GuardedBy("this")
  private String lastBad;

  private GrantsFile(Path file, Ticker ticker, String contents, Grants grants) {
    this.file = file;
    this.ticker = ticker;
    this.contents = contents;
    this.grants = grants;
    this.checkedAtNanos = ticker.read();
  }

  /**
   * Reads and parses {@code file}.
   *
   * @throws IllegalArgumentException naming the file and what is wrong with it
   */
  static GrantsFile load(Path file) {
    return load(file, Ticker.systemTicker());
  }

  @VisibleForTesting
  static GrantsFile load(Path file, Ticker ticker) {
    requireNonNull(file, "file");
    String contents = read(file);
    try {
      return new GrantsFile(file, ticker, contents, Grants.parse(contents));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("authorize: " + file + ": " + e.getMessage(), e);
    }
  }

  private static String read(Path file) {
    try {
      return Files.readString(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new IllegalArgumentException("authorize: cannot read " + file + " (" + e + ")", e);
    }
  }

  /** The grants in force, after reading the file again if it is time to. */
  Grants current() {
    check();
    return grants;
  }

  private synchronized void check() {
    long now = ticker.read();
    if (now - checkedAtNanos < RECHECK.toNanos()) {
      return;
    }
    checkedAtNanos = now;
    String next;
    try {
      next = Files.readString(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      rejected(e.toString(), "cannot read it (" + e + ")");
      return;
    }
    if (next.equals(contents)) {
      return;
    }
    try {
      Grants parsed = Grants.parse(next);
      contents = next;
      lastBad = null;
      grants = parsed;
      log.info("Using the changed grants in {} ({} grants)", file, parsed.size());
    } catch (IllegalArgumentException e) {
      rejected(next, e.getMessage());
    }
  }

  @GuardedBy("this")
  private void rejected(String what, String why) {
    if (!what.equals(lastBad)) {
      lastBad = what;
      log.warn("Ignoring the changed grants in {}, keeping the last good ones: {}", file, why);
    }
  }

  Path file() {
    return file;
  }
}
