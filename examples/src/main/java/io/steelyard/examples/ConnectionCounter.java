package io.steelyard.examples;

import io.grpc.Attributes;
import io.grpc.ServerTransportFilter;
import java.util.concurrent.atomic.AtomicLong;

/** Counts transports that completed their handshake: one per client connection. */
final class ConnectionCounter extends ServerTransportFilter {
  private final AtomicLong count;

  ConnectionCounter(AtomicLong count) {
    this.count = count;
  }

  @Override
  public Attributes transportReady(Attributes transportAttrs) {
    count.incrementAndGet();
    return transportAttrs;
  }
}
