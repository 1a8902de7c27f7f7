package io.steelyard.spring;

/**
 * The gRPC server's key was not in etcd within {@code steelyard.registration.await-on-startup}, or
 * etcd refused it; the message says which and names etcd. {@link SteelyardFailureAnalyzer} turns it
 * into Spring Boot's "APPLICATION FAILED TO START" report.
 */
final class RegistrationNotReadyException extends IllegalStateException {
  private static final long serialVersionUID = 1L;

  RegistrationNotReadyException(String message) {
    super(message);
  }
}
