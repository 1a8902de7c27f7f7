package io.steelyard.cli;

import io.steelyard.agent.RegisteredInstance;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

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

  @Mixin InstanceArgs instance;

  @Override
  public Integer call() {
    checkInstance(instance);
    String service = instance.service;
    String address = instance.address;
    var store = store();
    RegisteredInstance current = store.require(service, address);
    int before = current.acceptedOrThrow().weight();
    RegisteredInstance after = store.drain(current);
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
