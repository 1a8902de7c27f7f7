package io.steelyard.examples;

/**
 * Registers a started greeter in etcd through the embedded agent. A seam of its own so that the
 * server's lifecycle reads the same whichever agent API is behind it.
 */
final class Registrar {

  /** A live registration. */
  interface Handle extends AutoCloseable {
    void setWeight(int weight);

    int weight();

    /** Deregisters: revokes the lease, so the key disappears at once. Never throws. */
    @Override
    void close();
  }

  static Handle register(GreeterServer.Builder config, String address) {
    // TODO(examples): replace with io.steelyard.agent.ServiceRegistration once the agent branch
    // has landed on main; until then only --register false is available.
    throw new IllegalStateException(
        "registration needs the agent's ServiceRegistration, which is not in this build yet;"
            + " run with --register false");
  }

  private Registrar() {}
}
