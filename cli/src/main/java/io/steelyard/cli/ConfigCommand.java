package io.steelyard.cli;

import io.steelyard.discovery.ChannelConfigCheck;
import io.steelyard.registry.admin.ServiceConfigStore;
import io.steelyard.xds.XdsConfigPreview;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import picocli.CommandLine.Command;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;

@Command(
    name = "config",
    mixinStandardHelpOptions = true,
    description = "Read, check, set or delete the service config of a service's clients.",
    footer = {
      "",
      "The config is a gRPC service config (JSON) kept in <prefix>/.config/<service>;",
      "every etcd:/// channel of the service uses it without a restart.",
      "",
      "Examples:",
      "  steelyard config get greeter",
      "  steelyard config set greeter '{\"loadBalancingConfig\":[{\"weighted_least_request\":{}}]}'",
      "  steelyard config set greeter @greeter-config.json"
    },
    subcommands = {
      ConfigCommand.Get.class,
      ConfigCommand.Set.class,
      ConfigCommand.Validate.class,
      ConfigCommand.Delete.class
    })
final class ConfigCommand extends CliCommand {

  @Override
  public Integer call() {
    throw new ParameterException(spec.commandLine(), "missing command: get, set, validate or delete");
  }

  /** What get, set, validate and delete share: the service's config store. */
  abstract static class ConfigSubcommand extends CliCommand {
    @Parameters(index = "0", paramLabel = "SERVICE", description = "Service name, e.g. greeter.")
    String service;

    final ServiceConfigStore configs() {
      return cli().configStore(settings());
    }

    /** The JSON given inline, or read from the file after {@code @}; a usage error otherwise. */
    final String readConfig(String arg) {
      if (!arg.startsWith("@")) {
        return arg;
      }
      Path file = Path.of(arg.substring(1));
      try {
        return Files.readString(file, StandardCharsets.UTF_8);
      } catch (IOException | RuntimeException e) {
        throw new ParameterException(
            spec.commandLine(), "cannot read service config file " + file + ": " + e, e);
      }
    }

    /** Checks {@code json} with the channel's parser; a refused config is a usage error. */
    final void validate(String json) {
      Usage.check(spec, () -> ServiceConfigStore.validateWith(json, ChannelConfigCheck.create()));
    }
  }

  @Command(
      name = "get",
      mixinStandardHelpOptions = true,
      description = "Print the service config stored for SERVICE, or say there is none.",
      footer = {"", "Example:", "  steelyard config get greeter"})
  static final class Get extends ConfigSubcommand {
    @Override
    public Integer call() {
      checkService(service);
      var stored = configs().get(service);
      if (stored.isEmpty()) {
        out().println("no service config for " + service
            + " (clients use their fallback; see docs/balancer.md)");
      } else {
        out().println(stored.get().json());
      }
      return ExitCodes.OK;
    }
  }

  @Command(
      name = "set",
      mixinStandardHelpOptions = true,
      description = {
        "Store CONFIG as SERVICE's service config, after checking it with the",
        "parser every client uses (grpc's, and the balancer's for its policies).",
        "A refused config exits 2 with the parser's reason and etcd is untouched."
      },
      footer = {
        "",
        "Example:",
        "  steelyard config set greeter '{\"loadBalancingConfig\":[{\"weighted_least_request\":{\"choiceCount\":4}}]}'"
      })
  static final class Set extends ConfigSubcommand {
    @Parameters(index = "1", paramLabel = "CONFIG", description = "JSON, or @FILE to read it from a file.")
    String config;

    @Override
    public Integer call() {
      checkService(service);
      String json = readConfig(config);
      ServiceConfigStore store = configs();
      // The store checks the config with the channel's parser before it writes: once, here.
      ServiceConfigStore.StoredConfig stored = Usage.check(spec, () -> store.set(service, json));
      out().println("service config of " + service + " set at revision " + stored.modRevision()
          + " (" + stored.key() + ")");
      return ExitCodes.OK;
    }
  }

  @Command(
      name = "validate",
      mixinStandardHelpOptions = true,
      description = {
        "Check CONFIG as set does, without writing it: exit 0 when every client",
        "would accept it, 2 with the parser's reason when not. Needs no etcd.",
        "Also prints what steelyard-xds serves of it to xDS clients (Python, Node,",
        "Go, C++, Java's grpc-xds) and what it leaves out."
      },
      footer = {"", "Example:", "  steelyard config validate greeter @greeter-config.json"})
  static final class Validate extends ConfigSubcommand {
    @Parameters(index = "1", paramLabel = "CONFIG", description = "JSON, or @FILE to read it from a file.")
    String config;

    @Override
    public Integer call() {
      checkService(service);
      String json = readConfig(config);
      validate(json);
      out().println("service config for " + service + " is valid");
      XdsConfigPreview xds = XdsConfigPreview.of(ChannelConfigCheck.create(), json);
      out().println(xds.served().isEmpty()
          ? "steelyard-xds serves it as the defaults (registered weights, zone-aware, round robin)"
          : "steelyard-xds serves from it:");
      xds.served().forEach(line -> out().println("  " + line));
      if (!xds.leftOut().isEmpty()) {
        out().println("steelyard-xds leaves out (xDS has no form for it; Java etcd:/// channels still apply it):");
        xds.leftOut().forEach(line -> out().println("  " + line));
      }
      return ExitCodes.OK;
    }
  }

  @Command(
      name = "delete",
      mixinStandardHelpOptions = true,
      description = {
        "Delete SERVICE's service config: its clients go back to the resolver's",
        "fallback (weighted_random unless a channel set its own; see docs/balancer.md)."
      },
      footer = {"", "Example:", "  steelyard config delete greeter"})
  static final class Delete extends ConfigSubcommand {
    @Override
    public Integer call() {
      checkService(service);
      boolean deleted = configs().delete(service);
      out().println(deleted
          ? "service config of " + service + " deleted"
          : "no service config for " + service + "; nothing deleted");
      return ExitCodes.OK;
    }
  }
}
