package io.steelyard.examples;

import org.slf4j.bridge.SLF4JBridgeHandler;

/** Logging set-up shared by the example mains. */
final class Logging {

  private Logging() {}

  /**
   * Routes java.util.logging (grpc's and Vert.x's logger) through SLF4J to logback, so stderr
   * carries one format only and JUL's two-line console records never appear. Call first in main.
   */
  static void routeJulToSlf4j() {
    SLF4JBridgeHandler.removeHandlersForRootLogger();
    SLF4JBridgeHandler.install();
  }
}
