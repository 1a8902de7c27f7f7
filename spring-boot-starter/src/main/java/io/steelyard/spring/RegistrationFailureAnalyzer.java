package io.steelyard.spring;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/**
 * Reports a gRPC server whose key did not reach etcd during startup ({@link
 * RegistrationNotReadyException}) with the reason and the two ways on; listed in {@code
 * META-INF/spring.factories}.
 */
final class RegistrationFailureAnalyzer extends AbstractFailureAnalyzer<RegistrationNotReadyException> {

  @Override
  protected FailureAnalysis analyze(Throwable rootFailure, RegistrationNotReadyException cause) {
    String action = "Check that etcd is reachable at steelyard.etcd.endpoints and that its user may"
        + " write the service's keys; or set steelyard.registration.await-on-startup to a longer"
        + " duration, or to 0 to start without waiting (the key then follows in the background).";
    return new FailureAnalysis(cause.getMessage(), action, cause);
  }
}
