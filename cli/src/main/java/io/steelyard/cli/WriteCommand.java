package io.steelyard.cli;

import io.steelyard.registry.admin.InstanceWrite;
import picocli.CommandLine.Mixin;

/**
 * The one path of the commands that change an instance ({@code weight set}, {@code drain}, {@code
 * undrain}, {@code deregister}): the arguments become an {@link InstanceWrite}, which checks them
 * (a bad one is a usage error, exit 2, before anything reaches etcd); the store carries it out;
 * its message is printed (exit 0). A failure is mapped to exit 1 with a one-line reason by {@link
 * SteelyardCli}'s failure handler, as for every command.
 */
abstract class WriteCommand extends CliCommand {

  @Mixin InstanceArgs instance;

  /** This command's write to {@code service}'s instance at {@code address}; checks its input. */
  abstract InstanceWrite write(String service, String address);

  @Override
  public final Integer call() {
    InstanceWrite write = Usage.check(spec, () -> write(instance.service, instance.address));
    InstanceWrite.Result result = cli().writeRunner().run(store(), write);
    out().println(result.message());
    return ExitCodes.OK;
  }
}
