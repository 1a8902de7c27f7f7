package io.steelyard.cli;

/** Defaults of the CLI's options, in picocli's text form (they show in {@code --help}). */
final class CliDefaults {

  /** How long to wait for etcd per request: {@value}. */
  static final String TIMEOUT = "5s";

  private CliDefaults() {}
}
