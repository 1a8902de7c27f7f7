package io.steelyard.registry.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.support.CloseableClient;
import io.grpc.stub.StreamObserver;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.RegistryException.Kind;
import io.steelyard.testkit.EtcdCluster;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Every failure {@link EtcdErrors} claims to classify, provoked against a real etcd where it can
 * be: a lost lease, a compacted revision, a response over the client's size limit, a database
 * over its quota, a closed port, a peer that never answers. (Permission and authentication
 * refusals: {@code EtcdConnectionAuthIT}.)
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class EtcdCallsIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  /** An etcd whose database may hold about 1 MB, to raise its NOSPACE alarm quickly. */
  @RegisterExtension
  static final EtcdCluster small =
      EtcdCluster.builder().extraArgs("--quota-backend-bytes=1000000").build();

  private static Client client;
  private static final EtcdCalls calls = new EtcdCalls(Duration.ofSeconds(10));

  @BeforeAll
  static void connect() {
    client = EtcdConnection.of(etcd.endpoints()).connect();
  }

  @AfterAll
  static void disconnect() {
    client.close();
  }

  @Test
  void revokingALeaseEtcdDoesNotKnowIsLeaseNotFound() {
    assertThatThrownBy(() -> calls.await("revoke lease 7e57", () -> client.getLeaseClient().revoke(0x7e57)))
        .isInstanceOfSatisfying(
            RegistryException.class,
            e -> {
              assertThat(e.kind()).isEqualTo(Kind.NOT_REGISTERED);
              assertThat(EtcdErrors.isLeaseNotFound(e)).isTrue();
              assertThat(e.getMessage())
                  .startsWith("etcd refused revoke lease 7e57: the lease is gone");
            });
  }

  @Test
  void writingWithALeaseEtcdDoesNotKnowIsLeaseNotFoundAsynchronouslyToo() {
    CompletableFuture<?> put =
        calls.call(
            "put /services/greeter/a:1",
            () ->
                client.getKVClient()
                    .put(bytes("/services/greeter/a:1"), bytes("a:1|1"),
                        PutOption.builder().withLeaseId(0x7e58).build()));

    RegistryException e = failureOf(put);
    assertThat(e.kind()).isEqualTo(Kind.NOT_REGISTERED);
    assertThat(EtcdErrors.isLeaseNotFound(e)).isTrue();
  }

  @Test
  void aKeepaliveOfARevokedLeaseEndsWithLeaseNotFound() throws Exception {
    long lease = client.getLeaseClient().grant(30).get(10, TimeUnit.SECONDS).getID();
    client.getLeaseClient().revoke(lease).get(10, TimeUnit.SECONDS);
    AtomicReference<Throwable> error = new AtomicReference<>();

    try (CloseableClient keepAlive =
        client.getLeaseClient().keepAlive(lease, new StreamObserver<LeaseKeepAliveResponse>() {
          @Override
          public void onNext(LeaseKeepAliveResponse value) {}

          @Override
          public void onError(Throwable t) {
            error.compareAndSet(null, t);
          }

          @Override
          public void onCompleted() {}
        })) {
      await().atMost(Duration.ofSeconds(10)).until(() -> error.get() != null);
    }

    assertThat(EtcdErrors.isLeaseNotFound(error.get())).as("%s", error.get()).isTrue();
  }

  @Test
  void readingACompactedRevisionIsCompacted() throws Exception {
    ByteSequence key = bytes("/compacted/k");
    long first = client.getKVClient().put(key, bytes("1")).get(10, TimeUnit.SECONDS).getHeader().getRevision();
    long last = client.getKVClient().put(key, bytes("2")).get(10, TimeUnit.SECONDS).getHeader().getRevision();
    client.getKVClient().compact(last).get(10, TimeUnit.SECONDS);

    assertThatThrownBy(
            () ->
                calls.await(
                    "get /compacted/k",
                    () -> client.getKVClient().get(key, GetOption.builder().withRevision(first).build())))
        .isInstanceOfSatisfying(
            RegistryException.class, e -> assertThat(e.kind()).isEqualTo(Kind.COMPACTED));
  }

  @Test
  void aListingOverTheClientsMessageLimitIsALimitNotUnreachability() throws Exception {
    // gRPC clients accept at most 4 MiB per response; etcd accepts 1.5 MiB per request.
    byte[] mib = new byte[1024 * 1024];
    Arrays.fill(mib, (byte) 'x');
    for (int i = 0; i < 5; i++) {
      client.getKVClient().put(bytes("/big/" + i), ByteSequence.from(mib)).get(10, TimeUnit.SECONDS);
    }

    assertThatThrownBy(
            () ->
                calls.await(
                    "list big",
                    () -> client.getKVClient().get(bytes("/big/"), GetOption.builder().isPrefix(true).build())))
        .isInstanceOfSatisfying(
            RegistryException.class,
            e -> {
              assertThat(e.kind()).isEqualTo(Kind.LIMIT);
              assertThat(e.kind().refused()).isTrue();
              assertThat(e.getMessage()).startsWith("etcd refused list big: over a size or quota limit");
            });
  }

  @Test
  void aDatabaseOverItsQuotaIsALimit() throws Exception {
    byte[] value = new byte[400 * 1024];
    Arrays.fill(value, (byte) 'x');
    try (Client c = EtcdConnection.of(small.endpoints()).connect()) {
      EtcdCalls smallCalls = new EtcdCalls(Duration.ofSeconds(10));
      RegistryException nospace = null;
      for (int i = 0; i < 20 && nospace == null; i++) {
        String key = "/fill/" + i;
        try {
          smallCalls.await("put " + key, () -> c.getKVClient().put(bytes(key), ByteSequence.from(value)));
        } catch (RegistryException e) {
          nospace = e;
        }
      }

      assertThat(nospace).as("etcd raised no NOSPACE alarm").isNotNull();
      assertThat(nospace.kind()).isEqualTo(Kind.LIMIT);
      assertThat(nospace.getMessage()).contains("database space exceeded");
    }
  }

  @Test
  void aClosedPortIsUnavailableAtOnceNotAfterTheTimeout() throws IOException {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    // EtcdConnection's calls do not wait for a connection: a refused one fails the call with its
    // reason, long before the 10 s timeout.
    EtcdCalls patient = new EtcdCalls(Duration.ofSeconds(10));
    try (Client c = EtcdConnection.of("http://127.0.0.1:" + port).connect()) {
      long started = System.nanoTime();
      assertThatThrownBy(() -> patient.await("get k", () -> c.getKVClient().get(bytes("k"))))
          .isInstanceOfSatisfying(
              RegistryException.class,
              e -> {
                assertThat(e.kind()).isEqualTo(Kind.UNAVAILABLE);
                assertThat(e.getMessage()).startsWith("etcd could not be reached for get k (UNAVAILABLE");
              });
      assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(5));
    }
  }

  @Test
  void aPeerThatNeverAnswersTimesOutAsynchronously() throws IOException {
    try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      CountDownLatch testOver = new CountDownLatch(1);
      Thread acceptor = new Thread(() -> {
        try (Socket s = silent.accept()) {
          testOver.await(); // holds the connection open and answers nothing
        } catch (IOException | InterruptedException e) {
          // test over
        }
      }, "silent-etcd");
      acceptor.setDaemon(true);
      acceptor.start();
      EtcdCalls quick = new EtcdCalls(Duration.ofMillis(500));
      try (Client c = EtcdConnection.of("http://127.0.0.1:" + silent.getLocalPort()).connect()) {
        CompletableFuture<?> get = quick.call("get k", () -> c.getKVClient().get(bytes("k")));

        assertUnavailableWithin500ms(() -> {
          throw failureOf(get);
        });
      } finally {
        testOver.countDown();
      }
    }
  }

  private static void assertUnavailableWithin500ms(ThrowingCallable call) {
    assertThatThrownBy(call)
        .isInstanceOfSatisfying(
            RegistryException.class,
            e -> {
              assertThat(e.kind()).isEqualTo(Kind.UNAVAILABLE);
              assertThat(e.getMessage()).isEqualTo("etcd did not answer within 500ms (get k)");
            });
  }

  /** Waits (bounded) for {@code f} to fail and returns its RegistryException. */
  private static RegistryException failureOf(CompletableFuture<?> f) {
    await().atMost(Duration.ofSeconds(15)).until(f::isDone);
    assertThat(f).isCompletedExceptionally();
    Throwable t = f.handle((v, e) -> e).join();
    assertThat(t).isInstanceOf(RegistryException.class);
    return (RegistryException) t;
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }
}
