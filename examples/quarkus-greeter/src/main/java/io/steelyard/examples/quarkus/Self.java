package io.steelyard.examples.quarkus;

import jakarta.enterprise.context.ApplicationScoped;

/** This instance's registered address, {@code HOST:PORT}, once its HTTP server listens. */
@ApplicationScoped
public class Self {

  private volatile String address = "";

  String address() {
    return address;
  }

  void address(String address) {
    this.address = address;
  }
}
