package io.steelyard.spring.cloud;

import static java.util.Objects.requireNonNull;

import com.google.common.collect.ImmutableMap;
import com.google.common.net.HostAndPort;
import java.net.URI;
import java.util.Map;
import java.util.Objects;
import org.springframework.cloud.client.ServiceInstance;

/**
 * One registered instance as Spring Cloud sees it: {@code host}, {@code port}, the registry's
 * metadata plus {@value #WEIGHT_METADATA_KEY}, and the {@linkplain #getWeight() weight} itself.
 * The instance id is the registered address, {@code HOST:PORT}, unique within a service.
 *
 * <pre>{@code
 * for (ServiceInstance i : discoveryClient.getInstances("greeter")) {
 *   int weight = ((SteelyardServiceInstance) i).getWeight(); // also i.getMetadata().get("weight")
 * }
 * }</pre>
 *
 * <p>Immutable.
 */
public final class SteelyardServiceInstance implements ServiceInstance {

  /** The metadata key that carries the weight, as the registry's JSON value format names it. */
  public static final String WEIGHT_METADATA_KEY = "weight";

  private final String serviceId;
  private final String address;
  private final String host;
  private final int port;
  private final int weight;
  private final Map<String, String> metadata;
  private final URI uri;

  SteelyardServiceInstance(io.steelyard.registry.ServiceInstance instance) {
    requireNonNull(instance, "instance");
    HostAndPort hp = HostAndPort.fromString(instance.address());
    this.serviceId = instance.service();
    this.address = instance.address();
    this.host = hp.getHost();
    this.port = hp.getPort();
    this.weight = instance.weight();
    this.metadata = ImmutableMap.<String, String>builder()
        .putAll(instance.metadata())
        .put(WEIGHT_METADATA_KEY, Integer.toString(weight))
        .build();
    this.uri = URI.create("http://" + address);
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

  /** Always false: the registry records no scheme; an application that needs TLS sets it itself. */
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
    return uri;
  }

  @Override
  public Map<String, String> getMetadata() {
    return metadata;
  }

  /** The registered weight, {@code 0..1000000}; 0 means drained (no new calls). */
  public int getWeight() {
    return weight;
  }

  /** The registered {@code HOST:PORT}. */
  public String getAddress() {
    return address;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof SteelyardServiceInstance that
        && serviceId.equals(that.serviceId)
        && address.equals(that.address)
        && weight == that.weight
        && metadata.equals(that.metadata);
  }

  @Override
  public int hashCode() {
    return Objects.hash(serviceId, address, weight, metadata);
  }

  @Override
  public String toString() {
    return serviceId + "/" + address + "|" + weight;
  }
}
