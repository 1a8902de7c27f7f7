package io.steelyard.agent.cli;

import io.steelyard.agent.RegisteredInstance;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

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
final class DrainCommand extends CliCommand {

  @Parameters(index = "0", paramLabel = "SERVICE", description = "Service name, e.g. greeter.")
  String service;

  @Parameters(index = "1", paramLabel = "ADDRESS", description = "host:port or [ipv6]:port.")
  String address;

  @Override
  public Integer call() {
    checkService(service);
    checkAddress(address);
    var store = store();
    int before = store.require(service, address).acceptedOrThrow().weight();
    RegisteredInstance after = store.drain(service, address);
    if (before != 0 && after.drainedFromWeight() >= 0) {
      out().println(
          address + " drained: weight " + after.drainedFromWeight() + " -> 0"
              + " (undrain restores " + after.drainedFromWeight() + ")");
    } else {
      out().println(
          address + " was already drained (weight 0"
              + (after.drainedFromWeight() >= 0
                  ? "; undrain restores " + after.drainedFromWeight() : "")
              + ")");
    }
    return SteelyardCli.EXIT_OK;
  }
}
