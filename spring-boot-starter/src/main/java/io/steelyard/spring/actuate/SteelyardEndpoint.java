package io.steelyard.spring.actuate;

import io.steelyard.agent.ServiceRegistration;
import io.steelyard.registry.DecodedValue;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.admin.InstanceWrite;
import io.steelyard.registry.admin.RegisteredInstance;
import io.steelyard.spring.GrpcServerRegistration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.boot.actuate.endpoint.web.annotation.WebEndpoint;

/**
 * {@code /actuator/steelyard}: this instance's registration, and its weight for an operator.
 *
 * <pre>
 * GET  /actuator/steelyard                       the registration and what etcd holds for it
 * POST /actuator/steelyard         {"weight": 8} set the weight (same lease, format kept)
 * POST /actuator/steelyard/drain                 weight 0, remembering the weight it replaced
 * POST /actuator/steelyard/undrain [{"weight":3}] the remembered (or given) weight back
 * </pre>
 *
 * <p>The writes are actuator write operations: expose the endpoint ({@code
 * management.endpoints.web.exposure.include=health,steelyard}) and secure them as any actuator
 * write (Spring Security's {@code EndpointRequest}). Each write is an {@link InstanceWrite},
 * checked and described as the CLI's is ({@code "message"} in the answer holds the CLI's line).
 * Answers: 200 with the registration; 400 for a bad weight or action; 409 when the instance is
 * not registered (or the key changed meanwhile); 503 when etcd did not answer; 502 when etcd
 * refused (permission, authentication, TLS).
 */
@WebEndpoint(id = "steelyard")
public final class SteelyardEndpoint {

  private static final Logger logger = LoggerFactory.getLogger(SteelyardEndpoint.class);

  private final GrpcServerRegistration registration;

  public SteelyardEndpoint(GrpcServerRegistration registration) {
    this.registration = registration;
  }

  @ReadOperation
  public WebEndpointResponse<Map<String, Object>> registration() {
    return answer(() -> null);
  }

  @WriteOperation
  public WebEndpointResponse<Map<String, Object>> weight(int weight) {
    return write(address -> InstanceWrite.setWeight(registration.service(), address, weight));
  }

  @WriteOperation
  public WebEndpointResponse<Map<String, Object>> action(
      @Selector String action, @Nullable Integer weight) {
    return switch (action) {
      case "drain" -> write(address -> InstanceWrite.drain(registration.service(), address));
      case "undrain" -> write(address -> weight == null
          ? InstanceWrite.undrain(registration.service(), address)
          : InstanceWrite.undrain(registration.service(), address, weight));
      default -> error(WebEndpointResponse.STATUS_BAD_REQUEST,
          "action: '" + action + "' (expected: drain or undrain)");
    };
  }

  /**
   * Builds the operator's write for this instance's address (the input is checked there, by the
   * rule the CLI uses), carries it out and answers with the registration and the write's message.
   */
  private WebEndpointResponse<Map<String, Object>> write(Function<String, InstanceWrite> write) {
    return answer(() -> {
      String address = registration.address().orElseThrow(() -> new IllegalStateException(
          registration.service() + " is not registered by this application yet: the gRPC server"
              + " is not listening"));
      InstanceWrite.Result result = registration.apply(write.apply(address));
      logger.info("{} through the actuator endpoint", result.message());
      return result;
    });
  }

  /** Runs {@code op}, then describes the registration (from {@code op}'s result when it made one). */
  private WebEndpointResponse<Map<String, Object>> answer(Supplier<InstanceWrite.@Nullable Result> op) {
    try {
      InstanceWrite.Result result = op.get();
      Map<String, Object> body = describe(result == null ? null : result.after());
      if (result != null) {
        body.put("message", result.message());
      }
      return new WebEndpointResponse<>(body, WebEndpointResponse.STATUS_OK);
    } catch (IllegalArgumentException e) {
      return error(WebEndpointResponse.STATUS_BAD_REQUEST, e.getMessage());
    } catch (IllegalStateException e) {
      return error(409, e.getMessage());
    } catch (RegistryException e) {
      int status = switch (e.kind()) {
        case NOT_REGISTERED, CONFLICT, MALFORMED, COMPACTED -> 409;
        case UNAVAILABLE -> WebEndpointResponse.STATUS_SERVICE_UNAVAILABLE;
        case PERMISSION_DENIED, UNAUTHENTICATED, TLS, LIMIT, REFUSED -> 502;
      };
      return error(status, e.getMessage());
    }
  }

  private Map<String, Object> describe(@Nullable RegisteredInstance fromEtcd) {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("service", registration.service());
    ServiceRegistration reg = registration.registration().orElse(null);
    out.put("state", registration.state().name());
    if (reg == null) {
      return out;
    }
    out.put("address", reg.address());
    out.put("key", reg.key());
    out.put("weight", reg.weight());
    out.put("leaseId", reg.leaseId());
    out.put("ttlSeconds", reg.ttlSeconds());
    Map<String, Object> etcd = new LinkedHashMap<>();
    try {
      RegisteredInstance now = fromEtcd != null ? fromEtcd : registration.read();
      etcd.put("leaseId", now.leaseId());
      if (now.value() instanceof DecodedValue.Accepted v) {
        etcd.put("weight", v.weight());
        etcd.put("format", v.format().name().toLowerCase(java.util.Locale.ROOT));
        etcd.put("metadata", v.metadata());
        // The registration learns a rewrite through its key watch; answer with what etcd holds.
        out.put("weight", v.weight());
      } else {
        etcd.put("malformed", ((DecodedValue.Rejected) now.value()).reason());
      }
      if (now.drainedFromWeight() >= 0) {
        etcd.put("drainedFromWeight", now.drainedFromWeight());
      }
    } catch (RuntimeException e) {
      etcd.put("error", e.getMessage());
    }
    out.put("etcd", etcd);
    return out;
  }

  private static WebEndpointResponse<Map<String, Object>> error(int status, @Nullable String message) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("status", status);
    body.put("error", message == null ? "" : message);
    return new WebEndpointResponse<>(body, status);
  }
}
