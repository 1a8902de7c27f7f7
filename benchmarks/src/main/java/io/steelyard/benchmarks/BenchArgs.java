package io.steelyard.benchmarks;

import javax.annotation.Nullable;

/**
 * The {@code --name value} arguments of the scenario benchmarks' {@code main} methods.
 *
 * <pre>{@code
 * int n = BenchArgs.intArg(args, "--registrations", 1_000);
 * }</pre>
 */
public final class BenchArgs {

  private BenchArgs() {}

  /** The integer after {@code name}, else {@code def}. */
  public static int intArg(String[] args, String name, int def) {
    String v = stringArg(args, name, null);
    return v == null ? def : Integer.parseInt(v);
  }

  /** The argument after {@code name}, else {@code def}. */
  @Nullable
  public static String stringArg(String[] args, String name, @Nullable String def) {
    for (int i = 0; i < args.length - 1; i++) {
      if (args[i].equals(name)) {
        return args[i + 1];
      }
    }
    return def;
  }
}
