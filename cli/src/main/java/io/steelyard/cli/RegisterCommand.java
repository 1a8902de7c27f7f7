package io.steelyard.cli;

import io.steelyard.agent.RegistrationState;
import io.steelyard.agent.ServiceRegistration;
import io.steelyard.agent.ServiceRegistrationBuilder;
import io.steelyard.registry.Localities;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.ValueCodec;
import io.steelyard.registry.ValueFormat;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.annotation.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(
    name = "register",
    mixinStandardHelpOptions = true,
    description = {
      "Register an instance and hold it, as a sidecar.",
      "For a server that cannot embed the agent: registers ADDRESS under SERVICE",
      "with the agent library (leased key, keepalive, re-registration when the",
      "lease is lost) until SIGINT or SIGTERM, then revokes the lease (the key",
      "is gone at once) and exits 0. Exits 1 if the key is not in etcd within",
      "--timeout of starting. If someone deregisters the instance meanwhile, it",
      "stays deregistered (with a warning) until the sidecar is restarted."
    },
    footer = {
      "",
      "Examples:",
      "  steelyard register greeter 10.0.0.7:50051 --weight 5",
      "  steelyard register greeter 10.0.0.7:50051 --ttl 5s \\",
      "      --meta zone=eu-1 --meta version=2",
      "  steelyard register greeter 10.0.0.8:50051 --zone eu-west-1a \\",
      "      --region eu-west-1"
    })
final class RegisterCommand extends CliCommand {

  enum Format {
    pipe,
    json
  }

  @Parameters(index = "0", paramLabel = "SERVICE", description = "Service name, e.g. greeter.")
  String service;

  @Parameters(index = "1", paramLabel = "ADDRESS", description = "host:port or [ipv6]:port to announce.")
  String address;

  @Option(
      names = {"-w", "--weight"},
      paramLabel = "W",
      defaultValue = "1",
      description = {"Weight, 0..1000000 (default: ${DEFAULT-VALUE}).", "Example: --weight 5"})
  long weight;

  @Option(
      names = "--ttl",
      paramLabel = "DURATION",
      defaultValue = "10s",
      converter = DurationConverter.class,
      description = {
        "Lease TTL, at least 2s (default: ${DEFAULT-VALUE}): how",
        "long the key outlives a killed sidecar.",
        "Example: --ttl 5s"
      })
  Duration ttl;

  @Option(
      names = "--format",
      paramLabel = "FORMAT",
      description = {
        "pipe (address|weight) or json (Go etcd naming,",
        "carries metadata). Default: pipe, or json",
        "when --meta is given. Example: --format json"
      })
  @Nullable
  Format format;

  @Option(
      names = "--meta",
      paramLabel = "KEY=VALUE",
      description = {"Metadata (json format only), repeatable.", "Example: --meta zone=eu-1"})
  List<String> meta = List.of();

  @Option(
      names = "--zone",
      paramLabel = "ZONE",
      description = {
        "Zone the instance runs in: metadata zone=ZONE",
        "(json format), read by zone-aware callers and",
        "the xDS server. Example: --zone eu-west-1a"
      })
  @Nullable
  String zone;

  @Option(
      names = "--region",
      paramLabel = "REGION",
      description = {
        "Region the instance runs in: metadata",
        "region=REGION (json format).",
        "Example: --region eu-west-1"
      })
  @Nullable
  String region;

  @Override
  public Integer call() {
    checkService(service);
    checkAddress(address);
    int w = checkWeight(weight);
    Map<String, String> metadata = Usage.check(spec, this::parseMeta);
    SteelyardCli cli = cli();
    ConnectionSettings settings = settings();
    Duration timeout = cli.timeout();
    ServiceRegistration registration =
        Usage.check(
            spec,
            () -> {
              ServiceRegistrationBuilder b =
                  ServiceRegistration.builder(settings.connection(), service, address)
                      .keyLayout(settings.layout())
                      .weight(w)
                      .ttl(ttl)
                      .metadata(metadata)
                      .operationTimeout(timeout)
                      .closeTimeout(timeout)
                      .listener(this::onStateChanged);
              if (format != null) {
                b.format(format == Format.json ? ValueFormat.JSON : ValueFormat.PIPE);
              }
              return b.build();
            });
    cli.noteConnection(settings);
    // Safety net for an exit that is not SIGINT/SIGTERM (those are handled in order below):
    // revoke the lease rather than leave the key to expire with its TTL.
    Thread hook = new Thread(registration::close, "steelyard-register-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
    cli.stopSignal().listen();
    try {
      awaitRegistered(registration, timeout);
      out().println(
          "registered " + registration.key() + " weight=" + w
              + " lease=" + ListCommand.leaseText(registration.leaseId())
              + " ttl=" + registration.ttlSeconds() + "s"
              + (metadata.isEmpty() ? "" : " " + ListCommand.metadataText(new TreeMap<>(metadata)))
              + " (SIGINT/SIGTERM to deregister)");
      out().flush();
      cli.stopSignal().await();
      registration.close();
      out().println("deregistered " + registration.key() + " (lease revoked)");
      return ExitCodes.OK;
    } finally {
      registration.close();
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException shuttingDown) {
        // The hook runs (or ran) anyway; close is idempotent.
      }
    }
  }

  private void awaitRegistered(ServiceRegistration registration, Duration timeout) {
    try {
      registration.start().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      throw new RegistryException(
          RegistryException.Kind.UNAVAILABLE,
          "could not register " + registration.key() + " within " + timeout.toMillis() + "ms",
          e);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RegistryException refused) {
        throw refused; // etcd said no: its reason, not "could not register"
      }
      throw new RegistryException(
          RegistryException.Kind.UNAVAILABLE,
          "could not register " + registration.key() + ": " + e.getMessage(),
          e);
    } catch (CancellationException e) {
      throw new RegistryException(
          RegistryException.Kind.UNAVAILABLE,
          "could not register " + registration.key() + ": " + e.getMessage(),
          e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new RegistryException(
          RegistryException.Kind.UNAVAILABLE,
          "interrupted before " + registration.key() + " was registered",
          e);
    }
  }

  private Map<String, String> parseMeta() {
    Map<String, String> out = new LinkedHashMap<>();
    for (String kv : meta) {
      int eq = kv.indexOf('=');
      if (eq <= 0) {
        throw new IllegalArgumentException("meta: '" + kv + "' (expected: KEY=VALUE)");
      }
      String k = kv.substring(0, eq);
      if (k.equals(ValueCodec.WEIGHT_METADATA_KEY)) {
        throw new IllegalArgumentException("meta: '" + kv + "' (expected: --weight for the weight)");
      }
      if (out.put(k, kv.substring(eq + 1)) != null) {
        throw new IllegalArgumentException("meta: key '" + k + "' given twice");
      }
    }
    locality(out, Localities.ZONE_KEY, zone);
    locality(out, Localities.REGION_KEY, region);
    if (!out.isEmpty() && format == Format.pipe) {
      throw new IllegalArgumentException(
          "meta: the pipe format cannot carry metadata (expected: --format json)");
    }
    return out;
  }

  /** Adds {@code --zone}/{@code --region} to the metadata; also given with --meta is an error. */
  private static void locality(Map<String, String> metadata, String key, @Nullable String value) {
    if (value == null) {
      return;
    }
    Localities.checkName(key, value);
    if (metadata.put(key, value) != null) {
      throw new IllegalArgumentException(
          key + ": given with --" + key + " and --meta " + key + "= (expected: one of them)");
    }
  }

  // Runs on the registration's thread (the only one touching wasRecovering): print, never block.
  private void onStateChanged(RegistrationState state) {
    String line =
        switch (state) {
          case RECOVERING -> "lease lost; registering again";
          case DELETED_BY_OPERATOR ->
              "the key was deleted by someone else; staying deregistered until restarted";
          case REGISTERED -> wasRecovering ? "registered again" : null;
          // Before the first registration the refusal ends the command with its reason instead.
          case REFUSED -> registeredOnce ? "etcd refuses to register it again; retrying slowly" : null;
          default -> null;
        };
    wasRecovering = state == RegistrationState.RECOVERING;
    registeredOnce |= state == RegistrationState.REGISTERED;
    if (line != null) {
      err().println("steelyard: " + service + " " + address + ": " + line);
      err().flush();
    }
  }

  private boolean wasRecovering;
  private boolean registeredOnce;
}
