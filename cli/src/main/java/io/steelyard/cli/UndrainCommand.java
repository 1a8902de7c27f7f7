package io.steelyard.cli;

import io.steelyard.agent.RegisteredInstance;
import java.util.OptionalInt;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(
    name = "undrain",
    mixinStandardHelpOptions = true,
    description = {
      "Give a drained instance its weight back.",
      "Restores --weight W if given, else the weight recorded by drain, else 1.",
      "An instance that is not drained is left alone unless --weight is given."
    },
    footer = {
      "",
      "Examples:",
      "  steelyard undrain greeter 10.0.0.7:50051",
      "  steelyard undrain greeter 10.0.0.7:50051 --weight 3"
    })
final class UndrainCommand extends CliCommand {

  @Mixin InstanceArgs instance;

  @Option(
      names = {"-w", "--weight"},
      paramLabel = "W",
      description = {
        "Weight to restore (0..1000000) instead of",
        "the one recorded by drain. Example: --weight 3"
      })
  Long weight;

  @Override
  public Integer call() {
    checkInstance(instance);
    String service = instance.service;
    String address = instance.address;
    OptionalInt w = weight == null ? OptionalInt.empty() : OptionalInt.of(checkWeight(weight));
    var store = store();
    RegisteredInstance before = store.require(service, address);
    int old = before.acceptedOrThrow().weight();
    RegisteredInstance after = store.undrain(before, w);
    int now = after.acceptedOrThrow().weight();
    if (old != 0 && w.isEmpty()) {
      out().println(address + " is not drained (weight " + old + "); nothing changed");
    } else {
      out().println(address + " weight " + old + " -> " + now);
    }
    return SteelyardCli.EXIT_OK;
  }
}
