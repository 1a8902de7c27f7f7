package io.steelyard.cli;

import java.util.function.Supplier;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;

/** Turns bad input into a usage error (exit 2) of the command it was given to. */
final class Usage {

  private Usage() {}

  /** Runs {@code check}; an {@link IllegalArgumentException} becomes a usage error of {@code command}. */
  static <T> T check(CommandSpec command, Supplier<T> check) {
    try {
      return check.get();
    } catch (IllegalArgumentException e) {
      throw new ParameterException(command.commandLine(), e.getMessage(), e);
    }
  }
}
