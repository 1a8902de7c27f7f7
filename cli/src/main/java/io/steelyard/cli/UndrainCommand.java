package io.steelyard.cli;

import io.steelyard.registry.admin.InstanceWrite;
import javax.annotation.Nullable;
import picocli.CommandLine.Command;
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
final class UndrainCommand extends WriteCommand {

  @Option(
      names = {"-w", "--weight"},
      paramLabel = "W",
      description = {
        "Weight to restore (0..1000000) instead of",
        "the one recorded by drain. Example: --weight 3"
      })
  @Nullable
  Long weight;

  @Override
  InstanceWrite write(String service, String address) {
    return weight == null
        ? InstanceWrite.undrain(service, address)
        : InstanceWrite.undrain(service, address, weight);
  }
}
