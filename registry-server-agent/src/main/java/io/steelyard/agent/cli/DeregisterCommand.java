package io.steelyard.agent.cli;

import io.steelyard.agent.RegistryException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

@Command(
    name = "deregister",
    mixinStandardHelpOptions = true,
    description = {
      "Delete the instance's key (and its drain note).",
      "The lease is left alone. An agent or sidecar holding the key respects",
      "the delete and stays deregistered until restarted. A key that does not",
      "exist fails with exit 1."
    },
    footer = {"", "Example:", "  steelyard deregister greeter 10.0.0.7:50051"})
final class DeregisterCommand extends CliCommand {

  @Parameters(index = "0", paramLabel = "SERVICE", description = "Service name, e.g. greeter.")
  String service;

  @Parameters(index = "1", paramLabel = "ADDRESS", description = "host:port or [ipv6]:port.")
  String address;

  @Override
  public Integer call() {
    checkService(service);
    checkAddress(address);
    var store = store();
    String key = store.layout().instanceKey(service, address);
    if (!store.delete(service, address)) {
      throw new RegistryException(
          RegistryException.Kind.NOT_REGISTERED,
          address + " is not registered under " + service + " (no key " + key + ")",
          null);
    }
    out().println("deleted " + key);
    return SteelyardCli.EXIT_OK;
  }
}
