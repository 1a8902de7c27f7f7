package io.steelyard.spring;

import static java.util.Objects.requireNonNull;

/**
 * A {@code steelyard.*} property holds a value steelyard refuses. The message names the property
 * and, in steelyard's usual form, the value and what was expected (never a password); {@link
 * SteelyardFailureAnalyzer} turns it into Spring Boot's "APPLICATION FAILED TO START" report.
 */
final class InvalidSteelyardPropertyException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  private final String property;

  InvalidSteelyardPropertyException(String property, IllegalArgumentException cause) {
    super(property + ": " + cause.getMessage(), cause);
    this.property = requireNonNull(property, "property");
  }

  InvalidSteelyardPropertyException(String property, String message) {
    super(property + ": " + message);
    this.property = requireNonNull(property, "property");
  }

  /** The full property name, e.g. {@code steelyard.registration.weight}. */
  String property() {
    return property;
  }
}
