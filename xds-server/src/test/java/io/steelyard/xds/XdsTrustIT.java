package io.steelyard.xds;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.etcd.jetcd.Client;
import io.grpc.ChannelCredentials;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.NameResolverRegistry;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.TlsChannelCredentials;
import io.grpc.xds.XdsNameResolverProvider;
import io.steelyard.examples.GreeterServer;
import io.steelyard.examples.proto.GreeterGrpc;
import io.steelyard.examples.proto.HelloRequest;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.internal.TlsFiles;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.TestCertificates;
import java.io.InputStream;
import java.io.OutputStream;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import javax.net.ssl.KeyManager;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManager;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The control plane's trust against real etcd and grpc-java channels over real (mutual) TLS,
 * with certificates generated here: who may connect, what each identity reads, a server
 * certificate replaced on disk, and the stream bounds.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class XdsTrustIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  private static final Duration WAIT = Duration.ofSeconds(15);
  private static final String GREETER_ID = "spiffe://test/greeter-client";
  private static final String BILLING_ID = "spiffe://test/billing-client";

  @TempDir static Path dir;
  private static TestCertificates certs;
  private static Client client;

  @AfterAll
  static void disconnect() {
    client.close();
  }

  private static void register(String service, String address, int weight) throws Exception {
    XdsServerIT.register(client, service, address, weight);
  }

  @BeforeAll
  static void registerAndIssue() throws Exception {
    certs = TestCertificates.generate(dir.resolve("pki"));
    certs.issueClientCertificate(dir.resolve("greeter.pem"), dir.resolve("greeter-key.pem"), "greeter-client", GREETER_ID);
    certs.issueClientCertificate(dir.resolve("billing.pem"), dir.resolve("billing-key.pem"), "billing-client", BILLING_ID);
    client = EtcdConnection.of(etcd.endpoints()).connect();
    register("greeter", "10.40.0.1:50051", 1);
    register("billing", "10.40.0.2:50051", 1);
  }

  private static XdsServer.Builder mutualTls(Path serverCert, Path serverKey) {
    return XdsServer.builder(EtcdConnection.of(etcd.endpoints()))
        .port(0)
        .tls(serverCert, serverKey)
        .clientCa(certs.caCert());
  }

  private static ManagedChannel channel(int port, ChannelCredentials credentials) {
    return Grpc.newChannelBuilderForAddress("127.0.0.1", port, credentials).build();
  }

  private static ChannelCredentials withCertificate(Path cert, Path key) throws Exception {
    return TlsChannelCredentials.newBuilder().trustManager(certs.caCert().toFile())
        .keyManager(cert.toFile(), key.toFile()).build();
  }

  private static ChannelCredentials withoutCertificate() throws Exception {
    return TlsChannelCredentials.newBuilder().trustManager(certs.caCert().toFile()).build();
  }

  private static List<String> clusters(DiscoveryResponse r) throws Exception {
    List<String> names = new ArrayList<>();
    for (var any : r.getResourcesList()) {
      names.add(any.unpack(Cluster.class).getName());
    }
    return names;
  }

  private static List<String> services(DiscoveryResponse r) throws Exception {
    List<String> names = new ArrayList<>();
    for (var any : r.getResourcesList()) {
      names.add(GrantedWatcher.serviceOf(r.getTypeUrl().equals(AdsProbe.EDS)
          ? any.unpack(io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment.class)
          : any.unpack(Cluster.class)));
    }
    return names;
  }

  @Test
  void aClientWithACertificateFromTheCaReadsAndOthersAreRefusedAtTheHandshake() throws Exception {
    try (XdsServer xds = mutualTls(certs.serverCert(), certs.serverKey()).build().start();
        AdsProbe signed = new AdsProbe(channel(xds.port(), withCertificate(certs.clientCert(), certs.clientKey())), "signed");
        AdsProbe anonymous = new AdsProbe(channel(xds.port(), withoutCertificate()), "anonymous");
        AdsProbe stranger = new AdsProbe(
            channel(xds.port(), withCertificate(certs.unknownCaClientCert(), certs.unknownCaClientKey())), "stranger")) {
      signed.subscribe(AdsProbe.CDS, List.of("greeter"));
      assertThat(clusters(signed.next(WAIT))).containsExactly("greeter");

      anonymous.subscribe(AdsProbe.CDS, List.of("greeter"));
      stranger.subscribe(AdsProbe.CDS, List.of("greeter"));
      await().atMost(WAIT).until(() -> anonymous.error() != null && stranger.error() != null);
      assertThat(Status.fromThrowable(anonymous.error()).getCode()).isEqualTo(Status.Code.UNAVAILABLE);
      assertThat(anonymous.poll(Duration.ZERO)).isNull();
      assertThat(stranger.poll(Duration.ZERO)).isNull();
      assertThat(xds.metrics().refusals("handshake")).isGreaterThanOrEqualTo(2);
    }
  }

  /**
   * What grpc-java's own xDS client does with the bootstrap's {@code tls} channel credential: it
   * ignores the credential's files, trusts the JVM's trust store and presents no certificate. So
   * with the private CA in the JVM's trust store it reads a control plane with server-only TLS
   * and calls through it, and a control plane that requires client certificates refuses it.
   */
  @Test
  void grpcJavasXdsClientTrustsTheJvmTrustStoreAndPresentsNoCertificate() throws Exception {
    Path trustStore = dir.resolve("jvm-trust.p12");
    KeyStore store = KeyStore.getInstance("PKCS12");
    store.load(null, null);
    try (InputStream in = Files.newInputStream(certs.caCert())) {
      store.setCertificateEntry("steelyard-test-ca", CertificateFactory.getInstance("X.509").generateCertificate(in));
    }
    try (OutputStream out = Files.newOutputStream(trustStore)) {
      store.store(out, "changeit".toCharArray());
    }
    Map<String, String> jvmTrust = Map.of(
        "javax.net.ssl.trustStore", trustStore.toString(),
        "javax.net.ssl.trustStorePassword", "changeit",
        "javax.net.ssl.trustStoreType", "PKCS12");
    Map<String, String> before = new HashMap<>();
    jvmTrust.keySet().forEach(k -> before.put(k, System.getProperty(k)));
    jvmTrust.forEach(System::setProperty);
    List<XdsNameResolverProvider> providers = new ArrayList<>();
    List<ManagedChannel> channels = new ArrayList<>();
    try (XdsServer serverOnly = XdsServer.builder(EtcdConnection.of(etcd.endpoints()))
            .port(0).tls(certs.serverCert(), certs.serverKey()).build().start();
        XdsServer mutual = mutualTls(certs.serverCert(), certs.serverKey()).build().start()) {
      GreeterServer greeter = QuickGreeters.builder(etcd, "java-tls").build().start();
      try {
        GreeterGrpc.GreeterBlockingStub viaServerOnly =
            grpcJavaXdsClient("xds-tls-server-only", serverOnly.port(), providers, channels);
        GreeterGrpc.GreeterBlockingStub viaMutual =
            grpcJavaXdsClient("xds-tls-mutual", mutual.port(), providers, channels);
        await().atMost(WAIT).ignoreExceptionsInstanceOf(StatusRuntimeException.class)
            .until(() -> greeter.address().equals(viaServerOnly.withDeadlineAfter(5, TimeUnit.SECONDS)
                .sayHello(HelloRequest.newBuilder().setName("java").build()).getServerAddress()));

        StatusRuntimeException refused = catchThrowableOfType(StatusRuntimeException.class,
            () -> viaMutual.withDeadlineAfter(3, TimeUnit.SECONDS)
                .sayHello(HelloRequest.newBuilder().setName("java").build()));
        assertThat(refused).as("a call through the mutual-TLS control plane").isNotNull();
        await().atMost(WAIT).until(() -> mutual.metrics().refusals("handshake") >= 1);
      } finally {
        greeter.shutdownNow();
      }
    } finally {
      for (ManagedChannel c : channels) {
        c.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
      providers.forEach(NameResolverRegistry.getDefaultRegistry()::deregister);
      before.forEach((k, v) -> {
        if (v == null) {
          System.clearProperty(k);
        } else {
          System.setProperty(k, v);
        }
      });
    }
  }

  /**
   * A grpc-java xDS client of the control plane on {@code port}, reached through {@code scheme},
   * whose bootstrap names the {@code tls} channel credential with the CA's file (which it ignores).
   */
  private static GreeterGrpc.GreeterBlockingStub grpcJavaXdsClient(
      String scheme, int port, List<XdsNameResolverProvider> providers, List<ManagedChannel> channels) {
    Map<String, Object> tls = Map.of("type", "tls", "config", Map.of("ca_certificate_file", certs.caCert().toString()));
    return grpcJavaXdsClient(scheme, port, tls, "java-tls", providers, channels);
  }

  /** A grpc-java xDS client of {@code service} through the control plane on {@code port}. */
  private static GreeterGrpc.GreeterBlockingStub grpcJavaXdsClient(String scheme, int port,
      Map<String, Object> channelCreds, String service, List<XdsNameResolverProvider> providers,
      List<ManagedChannel> channels) {
    Map<String, Object> bootstrap = Map.of(
        "xds_servers", List.of(Map.of(
            "server_uri", "127.0.0.1:" + port,
            "channel_creds", List.of(channelCreds),
            "server_features", List.of("xds_v3"))),
        "node", Map.of("id", scheme));
    XdsNameResolverProvider provider = XdsNameResolverProvider.createForTest(scheme, bootstrap);
    providers.add(provider);
    NameResolverRegistry.getDefaultRegistry().register(provider);
    ManagedChannel channel =
        Grpc.newChannelBuilder(scheme + ":///" + service, InsecureChannelCredentials.create()).build();
    channels.add(channel);
    return GreeterGrpc.newBlockingStub(channel);
  }

  @Test
  void eachIdentityReadsOnlyTheServicesItsGrantNames() throws Exception {
    Path grants = Files.writeString(dir.resolve("grants.json"), """
        {"grants": [
          {"identity": "%s", "services": ["greeter"]},
          {"identity": "%s", "services": ["billing*"]}
        ]}
        """.formatted(GREETER_ID, BILLING_ID));
    List<String> both = List.of("greeter", "billing");
    try (XdsServer xds = mutualTls(certs.serverCert(), certs.serverKey()).authorize(grants).build().start();
        AdsProbe greeter = new AdsProbe(
            channel(xds.port(), withCertificate(dir.resolve("greeter.pem"), dir.resolve("greeter-key.pem"))), "g");
        AdsProbe billing = new AdsProbe(
            channel(xds.port(), withCertificate(dir.resolve("billing.pem"), dir.resolve("billing-key.pem"))), "b")) {
      greeter.subscribe(AdsProbe.CDS, both);
      billing.subscribe(AdsProbe.CDS, both);
      DiscoveryResponse g = greeter.next(WAIT);
      DiscoveryResponse b = billing.next(WAIT);
      assertThat(clusters(g)).containsExactly("greeter");
      assertThat(clusters(b)).containsExactly("billing");
      greeter.ack(g, both);

      register("billing", "10.40.0.3:50051", 2); // a change to billing only
      greeter.subscribe(AdsProbe.EDS, List.of("billing"));
      List<String> seen = new ArrayList<>();
      for (DiscoveryResponse r = greeter.poll(Duration.ofSeconds(2)); r != null; r = greeter.poll(Duration.ofSeconds(1))) {
        seen.addAll(services(r));
      }
      assertThat(seen).as("what greeter-client received after billing changed").doesNotContain("billing");
      assertThat(xds.metrics().denied()).isGreaterThanOrEqualTo(1);
    }
  }

  @Test
  void aReplacedServerCertificateServesNewClientsWhileAnOpenStreamKeepsItsUpdates() throws Exception {
    rotation("rotate", (cert, key) -> mutualTls(cert, key), withCertificate(certs.clientCert(), certs.clientKey()));
  }

  @Test
  void serverOnlyTlsReloadsAReplacedCertificateAsMutualTlsDoes() throws Exception {
    rotation("rotate-server-only",
        (cert, key) -> XdsServer.builder(EtcdConnection.of(etcd.endpoints())).port(0).tls(cert, key),
        withoutCertificate());
  }

  /**
   * The server certificate of the control plane {@code server} builds is replaced on disk: a new
   * client sees the new chain, and a stream opened before keeps its updates.
   */
  private static void rotation(String service, BiFunction<Path, Path, XdsServer.Builder> server,
      ChannelCredentials credentials) throws Exception {
    // The files are read through one process-wide view per set of paths: each test its own.
    Path cert = dir.resolve(service + ".pem");
    Path key = dir.resolve(service + "-key.pem");
    Files.copy(certs.serverCert(), cert, StandardCopyOption.REPLACE_EXISTING);
    Files.copy(certs.serverKey(), key, StandardCopyOption.REPLACE_EXISTING);
    register(service, "10.40.1.1:50051", 1);
    try (XdsServer xds = server.apply(cert, key).build().start();
        AdsProbe open = new AdsProbe(channel(xds.port(), credentials), "open")) {
      open.subscribe(AdsProbe.CDS, List.of(service));
      open.ack(open.next(WAIT), List.of(service));
      open.subscribe(AdsProbe.EDS, List.of(service));
      open.ack(open.next(WAIT), List.of(service));
      assertThat(servedSerial(xds.port())).isEqualTo(serial(certs.serverCert()));

      Path next = dir.resolve(service + "-next.pem");
      Path nextKey = dir.resolve(service + "-next-key.pem");
      certs.issueServerCertificate(next, nextKey);
      Files.copy(nextKey, key, StandardCopyOption.REPLACE_EXISTING);
      Files.copy(next, cert, StandardCopyOption.REPLACE_EXISTING);

      await().atMost(WAIT).until(() -> servedSerial(xds.port()).equals(serial(next)));
      try (AdsProbe fresh = new AdsProbe(channel(xds.port(), credentials), "fresh")) {
        fresh.subscribe(AdsProbe.CDS, List.of(service));
        assertThat(clusters(fresh.next(WAIT))).containsExactly(service);
      }
      register(service, "10.40.1.2:50051", 1);
      assertThat(open.next(WAIT).getTypeUrl()).as("the open stream's update").isEqualTo(AdsProbe.EDS);
    }
  }

  /**
   * The recommended deployment: one control plane with a plaintext loopback listener, where
   * grpc-java's own xDS client (which presents no client certificate) reads and calls, beside a
   * mutual-TLS listener with grants, where a client with a certificate reads its services.
   * (Python's C-core client over the TLS listener of such a process: {@code scripts/interop-xds}.)
   */
  @Test
  void aPlaintextLoopbackListenerServesGrpcJavasXdsClientBesideTheMutualTlsOne() throws Exception {
    Path grants = Files.writeString(dir.resolve("grants-beside.json"),
        "{\"grants\": [{\"identity\": \"%s\", \"services\": [\"greeter\"]}]}".formatted(GREETER_ID));
    List<XdsNameResolverProvider> providers = new ArrayList<>();
    List<ManagedChannel> channels = new ArrayList<>();
    try (XdsServer xds = mutualTls(certs.serverCert(), certs.serverKey()).tlsListen("127.0.0.1", 0)
            .authorize(grants).build().start();
        AdsProbe remote = new AdsProbe(
            channel(xds.tlsPort(), withCertificate(dir.resolve("greeter.pem"), dir.resolve("greeter-key.pem"))), "remote");
        AdsProbe plaintextOnTheTlsPort = new AdsProbe(xds.tlsPort(), "plaintext")) {
      assertThat(xds.tlsPort()).isNotEqualTo(xds.port());
      GreeterServer greeter = QuickGreeters.builder(etcd, "beside").build().start();
      try {
        GreeterGrpc.GreeterBlockingStub local = grpcJavaXdsClient(
            "xds-loopback", xds.port(), Map.of("type", "insecure"), "beside", providers, channels);
        await().atMost(WAIT).ignoreExceptionsInstanceOf(StatusRuntimeException.class)
            .until(() -> greeter.address().equals(local.withDeadlineAfter(5, TimeUnit.SECONDS)
                .sayHello(HelloRequest.newBuilder().setName("java").build()).getServerAddress()));
        for (int i = 0; i < 200; i++) {
          assertThat(local.withDeadlineAfter(5, TimeUnit.SECONDS)
              .sayHello(HelloRequest.newBuilder().setName("java").build()).getServerAddress())
              .isEqualTo(greeter.address());
        }
      } finally {
        greeter.shutdownNow();
      }
      remote.subscribe(AdsProbe.CDS, List.of("greeter", "billing"));
      assertThat(clusters(remote.next(WAIT))).containsExactly("greeter");
      plaintextOnTheTlsPort.subscribe(AdsProbe.CDS, List.of("greeter"));
      await().atMost(WAIT).until(() -> plaintextOnTheTlsPort.error() != null);
      assertThat(plaintextOnTheTlsPort.poll(Duration.ZERO)).isNull();
    } finally {
      for (ManagedChannel c : channels) {
        c.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
      providers.forEach(NameResolverRegistry.getDefaultRegistry()::deregister);
    }
  }

  /**
   * A certificate from the CA that names no URI SAN, DNS SAN or CN has no identity any grant
   * could name: under {@code --authorize} its streams are refused, and it reads nothing.
   */
  @Test
  void aCertificateWithoutANameIsRefusedUnderGrants() throws Exception {
    Path grants = Files.writeString(dir.resolve("grants-all.json"), "{\"grants\": [{\"identity\": \"*\", \"services\": [\"*\"]}]}");
    Path nameless = dir.resolve("nameless.pem");
    Path namelessKey = dir.resolve("nameless-key.pem");
    certs.issueClientCertificate(nameless, namelessKey, null, null, null);
    try (XdsServer xds = mutualTls(certs.serverCert(), certs.serverKey()).authorize(grants).build().start();
        AdsProbe anonymous = new AdsProbe(channel(xds.port(), withCertificate(nameless, namelessKey)), "nameless");
        AdsProbe named = new AdsProbe(
            channel(xds.port(), withCertificate(dir.resolve("greeter.pem"), dir.resolve("greeter-key.pem"))), "named")) {
      anonymous.subscribe(AdsProbe.CDS, List.of("greeter"));
      await().atMost(WAIT).until(() -> anonymous.error() != null);
      Status status = Status.fromThrowable(anonymous.error());
      assertThat(status.getCode()).isEqualTo(Status.Code.PERMISSION_DENIED);
      assertThat(status.getDescription()).contains("names no URI SAN, DNS SAN or subject CN");
      assertThat(anonymous.poll(Duration.ZERO)).isNull();
      assertThat(xds.metrics().refusals("identity")).isEqualTo(1);

      named.subscribe(AdsProbe.CDS, List.of("greeter"));
      assertThat(clusters(named.next(WAIT))).containsExactly("greeter");
    }
  }

  @Test
  void streamsOverTheBoundAreRefusedWhileTheFirstKeepReceivingUpdates() throws Exception {
    register("limits", "10.40.2.1:50051", 1);
    List<String> names = List.of("limits");
    try (XdsServer xds = XdsServer.builder(EtcdConnection.of(etcd.endpoints()))
            .port(0).maxStreamsPerPeer(2).maxNamesPerStream(2).build().start();
        AdsProbe first = new AdsProbe(xds.port(), "first");
        AdsProbe second = new AdsProbe(xds.port(), "second")) {
      first.subscribe(AdsProbe.EDS, names);
      second.subscribe(AdsProbe.EDS, names);
      first.ack(first.next(WAIT), names);
      second.ack(second.next(WAIT), names);
      try (AdsProbe third = new AdsProbe(xds.port(), "third")) {
        third.subscribe(AdsProbe.EDS, names);
        await().atMost(WAIT).until(() -> third.error() != null);
        Status status = Status.fromThrowable(third.error());
        assertThat(status.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
        assertThat(status.getDescription()).contains("more than 2 concurrent xDS streams from 127.0.0.1 (--max-streams-per-peer)");
      }
      second.subscribe(AdsProbe.CDS, List.of("limits", "greeter", "billing"));
      await().atMost(WAIT).until(() -> second.error() != null);
      assertThat(Status.fromThrowable(second.error()).getDescription()).contains("--max-names-per-stream");

      register("limits", "10.40.2.1:50051", 3);
      assertThat(first.next(WAIT).getTypeUrl()).as("the first stream's update").isEqualTo(AdsProbe.EDS);
      await().atMost(WAIT).until(() -> xds.clients() == 1);
      try (AdsProbe again = new AdsProbe(xds.port(), "again")) {
        again.subscribe(AdsProbe.EDS, names);
        assertThat(again.next(WAIT).getResourcesCount()).as("a slot given back").isEqualTo(1);
      }
    }
  }

  private static BigInteger serial(Path certFile) throws Exception {
    try (InputStream in = Files.newInputStream(certFile)) {
      return ((X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(in)).getSerialNumber();
    }
  }

  /** The serial of the certificate the server presents to a new connection now. */
  private static BigInteger servedSerial(int port) throws Exception {
    TlsFiles client = TlsFiles.of(certs.caCert(), certs.clientCert(), certs.clientKey());
    SSLContext context = SSLContext.getInstance("TLS");
    context.init(new KeyManager[] {client.keyManager()}, new TrustManager[] {client.trustManager()}, null);
    try (SSLSocket socket = (SSLSocket) context.getSocketFactory().createSocket("127.0.0.1", port)) {
      socket.startHandshake();
      return ((X509Certificate) socket.getSession().getPeerCertificates()[0]).getSerialNumber();
    }
  }
}
