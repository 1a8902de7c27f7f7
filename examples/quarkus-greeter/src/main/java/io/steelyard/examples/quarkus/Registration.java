package io.steelyard.examples.quarkus;

import io.quarkus.runtime.ShutdownDelayInitiatedEvent;
import io.quarkus.vertx.http.HttpServerStart;
import io.smallrye.stork.Stork;
import io.smallrye.stork.api.ServiceRegistrar;
import io.smallrye.stork.api.ServiceRegistrar.RegistrarOptions;
import io.steelyard.agent.AdvertisedAddress;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.enterprise.event.ObservesAsync;
import jakarta.inject.Inject;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * Registers this instance through Stork's {@code steelyard} registrar once the HTTP server
 * listens, and deregisters it when shutdown begins: Quarkus then keeps serving for {@code
 * quarkus.shutdown.delay} while callers, which see the key go within milliseconds, move away.
 * Quarkus registers only its built-in registrars by itself, so the application does it, as
 * Quarkus's guide to custom registrars shows.
 *
 * <p>Prints {@code READY address=HOST:PORT service=greeter weight=W zone=Z registered=true|false}
 * on stdout once the key is in etcd (or at once with {@code greeter.register=false}).
 */
@ApplicationScoped
public class Registration {

  private static final Logger logger = Logger.getLogger(Registration.class);

  @Inject Self self;

  @ConfigProperty(name = "greeter.register")
  boolean register;

  @ConfigProperty(name = "greeter.weight")
  int weight;

  @ConfigProperty(name = "greeter.zone")
  Optional<String> zone;

  @ConfigProperty(name = "quarkus.http.host")
  String host;

  void onListening(@ObservesAsync HttpServerStart start) {
    // quarkus.http.port=0 picks a free port; Quarkus then holds the chosen one in this property.
    int port = org.eclipse.microprofile.config.ConfigProvider.getConfig()
        .getValue("quarkus.http.port", Integer.class);
    String address = AdvertisedAddress.fromEnvironment().of(new InetSocketAddress(host, port));
    self.address(address);
    String ready = "READY address=" + address + " service=greeter weight=" + weight
        + " zone=" + zone.orElse("-") + " registered=" + register;
    if (!register) {
      ready(ready);
      return;
    }
    int colon = address.lastIndexOf(':');
    String advertisedHost = address.substring(0, colon).replace("[", "").replace("]", "");
    RegistrarOptions options = new RegistrarOptions(
        "greeter", advertisedHost, port, List.of(), zone.map(z -> Map.of("zone", z)).orElse(Map.of()));
    // Off Quarkus's threads: the registration's etcd client (jetcd) starts a Vert.x of its own,
    // which Vert.x warns about on a thread that already has a Vert.x context.
    Thread registering = new Thread(() -> registrar().registerServiceInstance(options)
        .subscribe().with(
            done -> ready(ready),
            failure -> logger.errorf(failure, "greeter: registration at %s refused", address)),
        "greeter-registration");
    registering.setDaemon(true);
    registering.start();
  }

  void onShutdownBegins(@Observes ShutdownDelayInitiatedEvent event) {
    if (register) {
      registrar().deregisterServiceInstance("greeter").await().atMost(Duration.ofSeconds(10));
      logger.infof("greeter: deregistered %s; serving for the shutdown delay", self.address());
    }
  }

  @SuppressWarnings("unchecked")
  private static ServiceRegistrar<?> registrar() {
    return Stork.getInstance().getService("greeter").getServiceRegistrar();
  }

  private static void ready(String line) {
    System.out.println(line);
    System.out.flush();
  }
}
