package io.steelyard.cli;

import picocli.CommandLine.Parameters;

/** The {@code SERVICE ADDRESS} arguments of the commands that act on one instance. */
final class InstanceArgs {

  @Parameters(index = "0", paramLabel = "SERVICE", description = "Service name, e.g. greeter.")
  String service;

  @Parameters(index = "1", paramLabel = "ADDRESS", description = "host:port or [ipv6]:port.")
  String address;
}
