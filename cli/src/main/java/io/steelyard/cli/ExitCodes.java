package io.steelyard.cli;

/**
 * The CLI's exit codes, as {@code steelyard --help} lists them; every command returns one of
 * these and every failure is mapped to one in {@link SteelyardCli}'s handlers.
 */
final class ExitCodes {

  /** Success. */
  static final int OK = 0;
  /** The operation failed: not registered, etcd unreachable within --timeout, revision conflict. */
  static final int FAILED = 1;
  /** Usage error: bad service name, address, weight or option; nothing reached etcd. */
  static final int USAGE = 2;

  private ExitCodes() {}
}
