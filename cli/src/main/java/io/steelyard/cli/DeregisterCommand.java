package io.steelyard.cli;

import io.steelyard.registry.admin.InstanceWrite;
import picocli.CommandLine.Command;

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
final class DeregisterCommand extends WriteCommand {

  @Override
  InstanceWrite write(String service, String address) {
    return InstanceWrite.deregister(service, address);
  }
}
