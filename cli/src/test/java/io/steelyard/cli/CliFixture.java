package io.steelyard.cli;

import io.etcd.jetcd.Client;
import io.steelyard.testkit.EtcdCluster;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * What a test class of CLI commands works with, against its own etcd cluster: a {@link Cli}
 * pointed at the cluster, a jetcd {@link Client} and a {@link Keyspace} over it to check what the
 * CLI wrote, and a service named for the running test method, so the tests of a class never share
 * keys. Connects once the cluster is up and closes the client before the cluster stops:
 *
 * <pre>{@code
 * @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();
 *
 * @RegisterExtension
 * @Order(CliFixture.AFTER_THE_CLUSTER)
 * static final CliFixture fixture = CliFixture.of(etcd);
 * }</pre>
 */
final class CliFixture implements BeforeAllCallback, AfterAllCallback, BeforeEachCallback {

  /**
   * The extension order of the fixture: after every extension without an order (the cluster's),
   * so its {@code beforeAll} runs once the cluster is up and its {@code afterAll} before the
   * cluster stops.
   */
  static final int AFTER_THE_CLUSTER = Integer.MAX_VALUE;

  private final EtcdCluster etcd;
  private Client client;
  private Keyspace keys;
  private Cli cli;
  private String service;

  private CliFixture(EtcdCluster etcd) {
    this.etcd = etcd;
  }

  /** The fixture of a test class over {@code etcd}; see the class comment. */
  static CliFixture of(EtcdCluster etcd) {
    return new CliFixture(etcd);
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    client = Client.builder().endpoints(etcd.endpoints()).build();
    keys = new Keyspace(client);
    cli = Cli.withEndpoints(etcd.endpoints());
  }

  @Override
  public void afterAll(ExtensionContext context) {
    if (client != null) {
      client.close();
    }
  }

  @Override
  public void beforeEach(ExtensionContext context) {
    service = context.getRequiredTestMethod().getName();
  }

  /** A client of the cluster, open for the whole class. */
  Client client() {
    return client;
  }

  /** Direct reads and writes of the cluster's keys, independent of the CLI's code. */
  Keyspace keys() {
    return keys;
  }

  /** The CLI, finding the cluster through {@code STEELYARD_ETCD_ENDPOINTS}. */
  Cli cli() {
    return cli;
  }

  /** The running test method's name. */
  String service() {
    return service;
  }
}
