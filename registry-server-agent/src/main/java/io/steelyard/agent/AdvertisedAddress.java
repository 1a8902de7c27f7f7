package io.steelyard.agent;

import static com.google.common.base.Preconditions.checkArgument;
import static java.util.Objects.requireNonNull;

import com.google.common.annotations.VisibleForTesting;
import com.google.common.net.HostAndPort;
import com.google.common.net.InetAddresses;
import io.grpc.Server;
import io.steelyard.registry.Validation;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketAddress;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.Supplier;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The address a server registers: where it listens, as other machines reach it. The one rule
 * behind {@link ServiceRegistrationBuilder#port} and {@link ServiceRegistrationBuilder#server}
 * and the Spring Boot starter; an explicit {@code host:port} ({@link
 * ServiceRegistrationBuilder#address}) bypasses it. The host is, in order:
 *
 * <ol>
 *   <li>the value of an environment variable, {@value #DEFAULT_HOST_VARIABLE} unless {@linkplain
 *       #withHostVariable renamed} (in Kubernetes, the pod IP from the downward API), when set and
 *       not blank;
 *   <li>the address the server is bound to, when it is bound to one (not the wildcard);
 *   <li>the first site-local address of an interface that is up and not loopback: IPv4
 *       (10/8, 172.16/12, 192.168/16) before IPv6 unique-local ({@code fc00::/7});
 *   <li>else the first other address that is neither loopback nor link-local, IPv4 first;
 *   <li>else the loopback address, with a warning: on a machine without a network only local
 *       clients can reach the server, which is what a developer's laptop wants and no cluster
 *       does.
 * </ol>
 *
 * The port is always the server's. An IPv6 host is written in brackets ({@code [fd00::7]:50051}).
 *
 * <pre>{@code
 * String address = AdvertisedAddress.fromEnvironment().of(server);   // e.g. "10.1.2.3:50051"
 * }</pre>
 *
 * <p>Immutable and thread-safe; each call reads the environment and the interfaces anew.
 */
public final class AdvertisedAddress {

  private static final Logger logger = LoggerFactory.getLogger(AdvertisedAddress.class);

  /** The environment variable read for the host unless {@link #withHostVariable} says otherwise: {@value}. */
  public static final String DEFAULT_HOST_VARIABLE = "STEELYARD_ADVERTISE_HOST";

  private final String hostVariable;
  private final Function<String, String> environment;
  private final Supplier<List<InetAddress>> interfaces;

  private AdvertisedAddress(
      String hostVariable, Function<String, String> environment, Supplier<List<InetAddress>> interfaces) {
    this.hostVariable = hostVariable;
    this.environment = environment;
    this.interfaces = interfaces;
  }

  /** The rule over this process's environment and this machine's network interfaces. */
  public static AdvertisedAddress fromEnvironment() {
    return from(System::getenv);
  }

  /**
   * The rule reading the host variable from {@code environment} (a variable's value, or null when
   * unset) and this machine's network interfaces; e.g. Spring's {@code environment::getProperty},
   * which sees the process environment and every other property source.
   */
  public static AdvertisedAddress from(Function<String, String> environment) {
    return new AdvertisedAddress(
        DEFAULT_HOST_VARIABLE, requireNonNull(environment, "environment"), AdvertisedAddress::interfaceAddresses);
  }

  /**
   * The rule over the given environment and interface addresses (in the machine's order, every
   * address of every interface that is up and not loopback), for tests.
   */
  @VisibleForTesting
  static AdvertisedAddress of(Function<String, String> environment, Supplier<List<InetAddress>> interfaces) {
    return new AdvertisedAddress(DEFAULT_HOST_VARIABLE, requireNonNull(environment), requireNonNull(interfaces));
  }

  /** The same rule reading the host from {@code variable}, e.g. {@code POD_IP}. */
  public AdvertisedAddress withHostVariable(String variable) {
    requireNonNull(variable, "variable");
    checkArgument(
        !variable.isEmpty() && variable.indexOf('=') < 0 && variable.indexOf('\0') < 0,
        "hostVariable: %s (expected: an environment variable name)", Validation.quote(variable));
    return new AdvertisedAddress(variable, environment, interfaces);
  }

  /**
   * {@code host:port} for a server listening on {@code port} on every address of this machine.
   *
   * @throws IllegalArgumentException if the port is out of range or the variable's value is not
   *     a host
   */
  public String of(int port) {
    checkArgument(port >= 1 && port <= 65535, "port: %s (expected: 1..65535)", port);
    return withPort(host(null), port);
  }

  /** {@code host:port} for a server listening on {@code listening} (wildcard or one address). */
  public String of(InetSocketAddress listening) {
    requireNonNull(listening, "listening");
    checkArgument(listening.getPort() > 0, "listening: %s (expected: a bound port)", listening);
    return withPort(host(listening.isUnresolved() ? null : listening.getAddress()), listening.getPort());
  }

  /**
   * {@code host:port} for a started {@code server}, from its first TCP listen socket.
   *
   * @throws IllegalArgumentException if the server listens on no TCP socket (not started yet, or
   *     in-process)
   */
  public String of(Server server) {
    requireNonNull(server, "server");
    return of(listenSocket(server).orElseThrow(() -> new IllegalArgumentException(
        "server: " + server + " (expected: a started server listening on a TCP port; "
            + "start it first, or give the port)")));
  }

  /** The first TCP socket {@code server} listens on; empty before it starts or for in-process servers. */
  static Optional<InetSocketAddress> listenSocket(Server server) {
    List<? extends SocketAddress> sockets;
    try {
      sockets = server.getListenSockets();
    } catch (IllegalStateException | UnsupportedOperationException e) {
      return Optional.empty(); // not started, or a server that cannot tell
    }
    return sockets.stream()
        .filter(InetSocketAddress.class::isInstance)
        .map(InetSocketAddress.class::cast)
        .findFirst();
  }

  private String host(@Nullable InetAddress bound) {
    String fromEnvironment = environment.apply(hostVariable);
    if (fromEnvironment != null && !fromEnvironment.isBlank()) {
      return checkedHost(fromEnvironment.strip());
    }
    if (bound != null && !bound.isAnyLocalAddress()) {
      return uriHost(bound);
    }
    List<InetAddress> all = interfaces.get();
    Optional<InetAddress> chosen = first(all, a -> a instanceof Inet4Address && a.isSiteLocalAddress())
        .or(() -> first(all, AdvertisedAddress::isUniqueLocal))
        .or(() -> first(all, a -> a instanceof Inet4Address && routable(a)))
        .or(() -> first(all, AdvertisedAddress::routable));
    if (chosen.isPresent()) {
      return uriHost(chosen.get());
    }
    InetAddress loopback = InetAddress.getLoopbackAddress();
    logger.warn(
        "No non-loopback address on this machine and {} is not set: registering {}, which only "
            + "local clients can reach", hostVariable, loopback.getHostAddress());
    return uriHost(loopback);
  }

  /**
   * The address as a URI host, without an IPv6 scope ({@code %eth0}): the interface name is
   * this machine's, meaningless to the machines that dial it.
   */
  private static String uriHost(InetAddress a) {
    try {
      return InetAddresses.toUriString(InetAddress.getByAddress(a.getAddress()));
    } catch (UnknownHostException e) {
      throw new AssertionError("an address of 4 or 16 bytes", e);
    }
  }

  private String checkedHost(String host) {
    if (!isHost(host)) {
      throw new IllegalArgumentException(
          "$" + hostVariable + ": " + Validation.quote(host) + " (expected: an IP address or a host name, no port)");
    }
    return canonical(host);
  }

  /** An IP literal in its one URI form ({@code FD00:0::42} is {@code [fd00::42]}); a host name as given. */
  private static String canonical(String host) {
    String literal = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
    return InetAddresses.isInetAddress(literal) ? InetAddresses.toUriString(InetAddresses.forString(literal)) : host;
  }

  private static Optional<InetAddress> first(List<InetAddress> all, Predicate<InetAddress> p) {
    return all.stream().filter(p).findFirst();
  }

  private static boolean isUniqueLocal(InetAddress a) {
    return a instanceof Inet6Address && ((a.getAddress()[0] & 0xfe) == 0xfc || a.isSiteLocalAddress());
  }

  private static boolean routable(InetAddress a) {
    return !a.isLoopbackAddress() && !a.isLinkLocalAddress() && !a.isAnyLocalAddress();
  }

  /**
   * {@code host:port}, an IP literal host in its canonical form and an IPv6 one in brackets:
   * {@code hostAndPort("FD00:0::7", 50051)} is {@code "[fd00::7]:50051"}.
   *
   * @throws IllegalArgumentException naming the host when it is no IP address or host name, or
   *     the port when it is out of range
   */
  public static String hostAndPort(String host, int port) {
    requireNonNull(host, "host");
    checkArgument(port >= 1 && port <= 65535, "port: %s (expected: 1..65535)", port);
    checkArgument(isHost(host), "host: %s (expected: an IP address or a host name, no port)", Validation.quote(host));
    return withPort(canonical(host), port);
  }

  /** An IPv4 address or host name, or an IPv6 literal with or without brackets; never a port. */
  private static boolean isHost(String host) {
    if (host.indexOf(':') < 0) {
      return Validation.isValidAddress(host + ":1");
    }
    String literal = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
    return InetAddresses.isInetAddress(literal)
        && InetAddresses.forString(literal) instanceof Inet6Address
        && Validation.isValidAddress(withPort(host, 1));
  }

  private static String withPort(String host, int port) {
    return HostAndPort.fromParts(host, port).toString();
  }

  private static List<InetAddress> interfaceAddresses() {
    List<InetAddress> out = new ArrayList<>();
    try {
      for (NetworkInterface nic : Collections.list(NetworkInterface.getNetworkInterfaces())) {
        if (nic.isUp() && !nic.isLoopback()) {
          out.addAll(Collections.list(nic.getInetAddresses()));
        }
      }
    } catch (SocketException e) {
      logger.warn("Cannot list the network interfaces; looking no further than the loopback address", e);
    }
    return out;
  }
}
