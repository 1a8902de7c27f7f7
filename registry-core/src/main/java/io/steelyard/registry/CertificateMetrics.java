package io.steelyard.registry;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.steelyard.registry.internal.TlsFiles;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Function;
import javax.annotation.Nullable;
import javax.annotation.concurrent.GuardedBy;

/**
 * The TLS files of every etcd connection in the process (see {@link EtcdConnection.Builder#tls}),
 * as Micrometer meters: when each certificate stops being valid, and how often changed files were
 * taken up or ignored. A {@link MeterBinder}; every meter is listed in {@code docs/metrics.md}.
 *
 * <pre>{@code
 * new CertificateMetrics().bindTo(meterRegistry);   // process-wide, once
 * }</pre>
 *
 * <p>{@value #NOT_AFTER} (tag {@code file}, for the CA file and the client certificate): the
 * not-after of the certificate in use, in seconds since the epoch (the earliest of a CA bundle).
 * {@value #RELOADS} and {@value #RELOAD_FAILURES} (tag {@code file}: the client certificate, or
 * the CA file without one): changed files taken up, and changed contents ignored as unusable.
 * Meters appear with the first connection built for the files; reading them looks at the files
 * (at most once a second), so they are current even when nothing reconnects.
 *
 * <p>Micrometer is an optional dependency of this module; only this class needs it. Thread-safe.
 */
public final class CertificateMetrics implements MeterBinder, AutoCloseable {

  public static final String NOT_AFTER = "steelyard.tls.certificate.not.after";
  public static final String RELOADS = "steelyard.tls.reloads";
  public static final String RELOAD_FAILURES = "steelyard.tls.reload.failures";

  @GuardedBy("this")
  private final List<Binding> bindings = new ArrayList<>();

  /** Registers the meters in {@code registry}; may be called for several registries. */
  @Override
  public void bindTo(MeterRegistry registry) {
    Binding b = new Binding(registry);
    synchronized (this) {
      bindings.add(b);
    }
    TlsFiles.onCreated(b);
    TlsFiles.all().forEach(b);
  }

  /** Removes every meter this binder registered. */
  @Override
  public void close() {
    List<Binding> all;
    synchronized (this) {
      all = new ArrayList<>(bindings);
      bindings.clear();
    }
    all.forEach(Binding::close);
  }

  private static final class Binding implements Consumer<TlsFiles> {
    private final MeterRegistry registry;

    @GuardedBy("this")
    private final List<Meter> meters = new ArrayList<>();

    @GuardedBy("this")
    private final List<TlsFiles> seen = new ArrayList<>();

    /** Files whose not-after is measured already: clients of one CA share its file. */
    @GuardedBy("this")
    private final java.util.Set<Path> measured = new java.util.HashSet<>();

    @GuardedBy("this")
    private boolean closed;

    Binding(MeterRegistry registry) {
      this.registry = registry;
    }

    @Override
    public synchronized void accept(TlsFiles files) {
      if (closed || seen.contains(files)) {
        return;
      }
      seen.add(files);
      Path main = files.caFile();
      if (main != null) {
        notAfter(main, files, TlsFiles::caNotAfter);
      }
      if (files.certFile() != null) {
        main = files.certFile();
        notAfter(main, files, TlsFiles::clientNotAfter);
      }
      meters.add(
          FunctionCounter.builder(RELOADS, files, TlsFiles::reloads)
              .description("changed TLS files taken up for new connections to etcd")
              .tag("file", main.toString())
              .register(registry));
      meters.add(
          FunctionCounter.builder(RELOAD_FAILURES, files, TlsFiles::failedReloads)
              .description("changed TLS file contents ignored as unusable (half-written, mismatched)")
              .tag("file", main.toString())
              .register(registry));
    }

    @GuardedBy("this")
    private void notAfter(Path file, TlsFiles files, Function<TlsFiles, Instant> when) {
      if (!measured.add(file)) {
        return;
      }
      meters.add(
          Gauge.builder(NOT_AFTER, files, f -> seconds(when.apply(f)))
              .description("not-after of the certificate in use, seconds since the epoch")
              .baseUnit("seconds")
              .tag("file", file.toString())
              .register(registry));
    }

    private static double seconds(@Nullable Instant t) {
      return t == null ? Double.NaN : t.getEpochSecond();
    }

    void close() {
      TlsFiles.removeListener(this);
      synchronized (this) {
        closed = true;
        meters.forEach(registry::remove);
        meters.clear();
      }
    }
  }
}
