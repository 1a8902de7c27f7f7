package io.steelyard.spring.cloud;

import static java.util.Objects.requireNonNull;

import com.google.common.collect.ImmutableMap;
import com.google.common.net.HostAndPort;
import io.steelyard.registry.Validation;
import java.net.URI;
import java.util.Map;
import org.springframework.cloud.client.serviceregistry.Registration;

/**
 * What {@link SteelyardServiceRegistry} registers: {@code HOST:PORT} under a service name, with a
 * weight and metadata, at {@code PREFIX/SERVICE/HOST:PORT} as every steelyard registration.
 *
 * <pre>{@code
 * SteelyardRegistration r = SteelyardRegistration.of("orders-http", "10.0.0.7", 8080, 5, Map.of("zone", "eu-1"));
 * registry.register(r);
 * }</pre>
 *
 * <p>Immutable; validated on construction by the registry's rules.
 */
public final class SteelyardRegistration implements Registration {

  private final String serviceId;
  private final String address;
  private final String host;
  private final int port;
  private final int weight;
  private final Map<String, String> metadata;
  private final Map<String, String> metadataWithWeight;

  private SteelyardRegistration(String serviceId, String host, int port, int weight, Map<String, String> metadata) {
    this.serviceId = Validation.checkServiceName(requireNonNull(serviceId, "serviceId"));
    this.address = Validation.checkAddress(HostAndPort.fromParts(host, port).toString());
    this.host = host;
    this.port = port;
    this.weight = Validation.checkWeight(weight);
    this.metadata = ImmutableMap.copyOf(metadata);
    this.metadataWithWeight = ImmutableMap.<String, String>builder()
        .putAll(metadata)
        .put(SteelyardServiceInstance.WEIGHT_METADATA_KEY, Integer.toString(weight))
        .build();
  }

  /**
   * A registration of {@code host:port} as {@code serviceId}.
   *
   * @throws IllegalArgumentException for a service name, address or weight the registry refuses
   */
  public static SteelyardRegistration of(
      String serviceId, String host, int port, int weight, Map<String, String> metadata) {
    return new SteelyardRegistration(serviceId, host, port, weight, metadata);
  }

  @Override
  public String getServiceId() {
    return serviceId;
  }

  /** The registered {@code HOST:PORT}. */
  @Override
  public String getInstanceId() {
    return address;
  }

  @Override
  public String getHost() {
    return host;
  }

  @Override
  public int getPort() {
    return port;
  }

  @Override
  public boolean isSecure() {
    return false;
  }

  /** Always {@code http}: the registry records no scheme. */
  @Override
  public String getScheme() {
    return "http";
  }

  @Override
  public URI getUri() {
    return URI.create("http://" + address);
  }

  /** The metadata with {@code weight}, as discovery clients see it. */
  @Override
  public Map<String, String> getMetadata() {
    return metadataWithWeight;
  }

  /** The metadata written to etcd (without the weight, which has its own field). */
  public Map<String, String> registeredMetadata() {
    return metadata;
  }

  /** The weight it registers with, {@code 0..1000000}. */
  public int getWeight() {
    return weight;
  }

  /** {@code HOST:PORT}, {@code [v6]:PORT} for an IPv6 host. */
  public String getAddress() {
    return address;
  }

  @Override
  public String toString() {
    return serviceId + "/" + address + "|" + weight;
  }
}
