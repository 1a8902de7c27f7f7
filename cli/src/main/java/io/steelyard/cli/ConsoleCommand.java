package io.steelyard.cli;

import io.steelyard.console.ConsoleServer;
import io.steelyard.registry.EtcdFailureText;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

@Command(
    name = "console",
    mixinStandardHelpOptions = true,
    description = {
      "Serve the registry in a browser, with weight, drain and deregister.",
      "Every service, one live page per service (weights, lease TTLs, metrics, expected against",
      "observed share) and weight/drain/undrain/deregister with a confirmation, through the same",
      "code path as these commands. Prints",
      "'READY console=URL' once its first listing of etcd is in (or has failed, which the",
      "pages then name); Ctrl-C stops it. Listens on loopback unless --token-file or",
      "--tls-cert/--tls-key is given (docs/console.md)."
    },
    footer = {
      "",
      "Examples:",
      "  steelyard console --port 8088",
      "  steelyard console --bind 0.0.0.0 --token-file /etc/steelyard/console.token --read-only",
      "  steelyard console --bind 0.0.0.0 --tls-cert console.pem --tls-key console-key.pem"
    })
final class ConsoleCommand extends CliCommand {

  @Option(names = "--port", paramLabel = "PORT", defaultValue = "" + ConsoleServer.DEFAULT_PORT,
      description = "Port to listen on, 0 for any free one (default: ${DEFAULT-VALUE}).")
  int port;

  @Option(names = "--bind", paramLabel = "ADDRESS", defaultValue = ConsoleServer.DEFAULT_BIND,
      description = {"Address to listen on (default: ${DEFAULT-VALUE}).",
          "Anything but loopback needs --token-file or TLS."})
  String bind;

  @Option(names = "--read-only", description = "Show the registry; offer and accept no action.")
  boolean readOnly;

  @Option(names = "--token-file", paramLabel = "FILE",
      description = {"File holding a token (16+ characters) every request must carry:",
          "open URL/?token=TOKEN once, or send 'Authorization: Bearer TOKEN'."})
  Path tokenFile;

  @Option(names = "--tls-cert", paramLabel = "FILE",
      description = {"Serve HTTPS with this certificate chain (PEM; needs --tls-key).",
          "Not etcd's: --cacert/--cert/--key are for etcd."})
  Path tlsCert;

  @Option(names = "--tls-key", paramLabel = "FILE",
      description = "Private key of --tls-cert (PEM, PKCS#8).")
  Path tlsKey;

  @Override
  public Integer call() {
    String token = tokenFile == null ? null : readToken(tokenFile);
    if ((tlsCert == null) != (tlsKey == null)) {
      throw new ParameterException(spec.commandLine(),
          "tls: --tls-cert and --tls-key go together (expected: both or neither)");
    }
    SteelyardCli cli = cli();
    ConnectionSettings settings = cli.settings(spec);
    cli.noteConnection(settings);
    ConsoleServer.Builder builder = Usage.check(spec, () -> {
      ConsoleServer.Builder b = ConsoleServer.builder(settings.connection())
          .layout(settings.layout())
          .timeout(cli.timeout())
          .bind(bind)
          .port(port)
          .readOnly(readOnly);
      if (tlsCert != null) {
        b.tls(tlsCert, tlsKey);
      }
      return token == null ? b : b.token(token);
    });
    cli.stopSignal().listen();
    ConsoleServer server;
    try {
      server = Usage.check(spec, builder::start);
    } catch (UncheckedIOException e) {
      err().println("steelyard: " + EtcdFailureText.oneLine(e.getMessage()));
      return ExitCodes.FAILED;
    }
    try (server) {
      // After the first listing (or its failure, which the pages then name), so a page opened
      // at once never shows an empty registry that is merely not listed yet.
      try {
        server.awaitFirstListing();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return ExitCodes.OK;
      }
      out().println("READY console=" + server.url());
      out().flush();
      cli.stopSignal().await();
    }
    return ExitCodes.OK;
  }

  private String readToken(Path file) {
    return Usage.check(spec, () -> {
      try {
        String t = Files.readString(file, StandardCharsets.UTF_8).strip();
        if (t.isEmpty()) {
          throw new IllegalArgumentException("token-file: " + file + " is empty");
        }
        return t;
      } catch (IOException e) {
        throw new IllegalArgumentException("token-file: " + file + " cannot be read (" + e + ")", e);
      }
    });
  }
}
