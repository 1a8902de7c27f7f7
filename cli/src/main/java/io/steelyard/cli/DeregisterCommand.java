package io.steelyard.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

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

  @Mixin InstanceArgs instance;

  @Override
  public Integer call() {
    checkInstance(instance);
    String service = instance.service;
    String address = instance.address;
    var store = store();
    String key = store.layout().instanceKey(service, address);
    if (!store.delete(service, address)) {
      throw store.notRegistered(service, address);
    }
    out().println("deleted " + key);
    return SteelyardCli.EXIT_OK;
  }
}
