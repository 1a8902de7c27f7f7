package io.steelyard.spring;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/**
 * Reports a refused {@code steelyard.*} property (a malformed etcd endpoint, a weight out of
 * range, a service name the registry refuses, ...) as one description naming the property and the
 * value, and the fix; listed in {@code META-INF/spring.factories}.
 */
final class SteelyardFailureAnalyzer extends AbstractFailureAnalyzer<InvalidSteelyardPropertyException> {

  @Override
  protected FailureAnalysis analyze(Throwable rootFailure, InvalidSteelyardPropertyException cause) {
    String description = "Invalid steelyard configuration: " + cause.getMessage();
    String action = "Fix the property " + cause.property() + " (in application.properties or"
        + " application.yml, as --" + cause.property() + "=... on the command line, or in the"
        + " environment). docs/spring-boot.md lists every steelyard property and its accepted values.";
    return new FailureAnalysis(description, action, cause);
  }
}
