package io.steelyard.cli;

import io.steelyard.registry.DecodedValue;
import io.steelyard.registry.admin.InstanceWrite;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;

@Command(
    name = "weight",
    mixinStandardHelpOptions = true,
    description = "Read or change the weight of one instance.",
    footer = {
      "",
      "Examples:",
      "  steelyard weight get greeter 10.0.0.7:50051",
      "  steelyard weight set greeter 10.0.0.7:50051 8"
    },
    subcommands = {WeightCommand.Get.class, WeightCommand.Set.class})
final class WeightCommand extends CliCommand {

  @Override
  public Integer call() {
    throw new ParameterException(spec.commandLine(), "missing command: get or set");
  }

  @Command(
      name = "get",
      mixinStandardHelpOptions = true,
      description = "Print the weight of the instance at ADDRESS (just the number).",
      footer = {"", "Example:", "  steelyard weight get greeter 10.0.0.7:50051"})
  static final class Get extends CliCommand {
    @Mixin InstanceArgs instance;

    @Override
    public Integer call() {
      checkInstance(instance);
      String service = instance.service;
      String address = instance.address;
      DecodedValue.Accepted value = store().require(service, address).acceptedOrThrow();
      out().println(value.weight());
      return ExitCodes.OK;
    }
  }

  @Command(
      name = "set",
      mixinStandardHelpOptions = true,
      description = {
        "Set the weight of the instance at ADDRESS (0..1000000).",
        "The value is rewritten with the key's current lease and in its format,",
        "guarded by its mod revision: a concurrent change fails with exit 1 and",
        "writes nothing. An address that is not registered fails with exit 1;",
        "no key is ever created."
      },
      footer = {"", "Example:", "  steelyard weight set greeter 10.0.0.7:50051 8"})
  static final class Set extends WriteCommand {
    @Parameters(index = "2", paramLabel = "WEIGHT", description = "0..1000000; 0 drains.")
    long weight;

    @Override
    InstanceWrite write(String service, String address) {
      return InstanceWrite.setWeight(service, address, weight);
    }
  }
}
