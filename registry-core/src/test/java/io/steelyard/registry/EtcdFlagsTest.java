package io.steelyard.registry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

class EtcdFlagsTest {

  @Command(name = "tool", subcommands = Sub.class)
  static final class Tool {
    @Mixin EtcdFlags etcd = new EtcdFlags();
  }

  @Command(name = "sub")
  static final class Sub {}

  private static EtcdFlags parse(String... args) {
    Tool tool = new Tool();
    new CommandLine(tool).parseArgs(args);
    return tool.etcd;
  }

  @Test
  void endpointsFromTheFlagWinOverTheEnvironment() {
    EtcdFlags flags = parse("--endpoints", "http://10.0.0.1:2379,http://10.0.0.2:2379");

    assertThat(flags.connectionBuilder(Map.of(EtcdConnection.ENDPOINTS_ENV, "http://env:2379")).build()
            .endpointsString())
        .isEqualTo("http://10.0.0.1:2379,http://10.0.0.2:2379");
  }

  @Test
  void withoutTheFlagTheEnvironmentThenTheDefaultIsUsed() {
    EtcdFlags flags = parse();

    assertThat(flags.endpoints(Map.of(EtcdConnection.ENDPOINTS_ENV, "http://env:2379"))).isEqualTo("http://env:2379");
    assertThat(flags.endpoints(Map.of())).isEqualTo(EtcdConnection.DEFAULT_ENDPOINTS);
  }

  @Test
  void flagsMayFollowTheSubcommand() {
    EtcdFlags flags = parse("sub", "--endpoints", "http://10.0.0.9:2379", "--prefix", "/registry");

    assertThat(flags.endpoints(Map.of())).isEqualTo("http://10.0.0.9:2379");
    assertThat(flags.layout().prefix()).startsWith("/registry");
  }

  @Test
  void prefixDefaultsToTheRegistryDefault() {
    assertThat(parse().layout().prefix()).isEqualTo(KeyLayout.defaults().prefix());
  }

  @Test
  void aClientCertificateWithoutACaIsRefusedNamingTheFlags() {
    EtcdFlags flags = parse("--cert", "client.pem", "--key", "client-key.pem");

    assertThatThrownBy(() -> flags.connectionBuilder(Map.of()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("tls: --cert and --key need --cacert");
  }

  @Test
  void userWithoutAPasswordIsRefusedWithoutEchoingIt() {
    EtcdFlags flags = parse("--user", "steelyard");

    assertThatThrownBy(() -> flags.connectionBuilder(Map.of()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("user");
  }

  @Test
  void everyFlagIsOneOption() {
    CommandLine cl = new CommandLine(new Tool());

    assertThat(cl.getCommandSpec().options()).extracting(o -> o.longestName())
        .contains("--endpoints", "--user", "--cacert", "--cert", "--key", "--prefix");
  }
}
