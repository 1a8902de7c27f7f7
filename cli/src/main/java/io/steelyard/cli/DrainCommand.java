package io.steelyard.cli;

import io.steelyard.registry.admin.InstanceWrite;
import picocli.CommandLine.Command;

@Command(
    name = "drain",
    mixinStandardHelpOptions = true,
    description = {
      "Drain an instance: set its weight to 0.",
      "It stays registered and connected but gets no new calls. The weight it",
      "had is kept in a note key <prefix>/.drained/<service>/<address> on the",
      "instance's lease (so it expires with the instance) for undrain."
    },
    footer = {"", "Example:", "  steelyard drain greeter 10.0.0.7:50051"})
final class DrainCommand extends WriteCommand {

  @Override
  InstanceWrite write(String service, String address) {
    return InstanceWrite.drain(service, address);
  }
}
