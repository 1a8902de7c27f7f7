package io.steelyard.registry.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The clients a {@link RenewableClient} hands out, and the ones it closes, against a real etcd. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RenewableClientIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  private static final ByteSequence KEY = ByteSequence.from("/renew/k", StandardCharsets.UTF_8);

  @Test
  void theFreshClientAnswersAndTheReplacedOneIsClosed() throws Exception {
    RenewableClient clients =
        RenewableClient.owned(EtcdConnection.of(etcd.endpoints()), Duration.ZERO);
    try {
      Client first = clients.client();
      assertThat(answers(first)).isTrue();

      assertThat(clients.renew(first)).isTrue();

      assertThat(answers(clients.client())).isTrue();
      // Closed on the closer thread: calls on it then fail at once (its channel is shut down).
      await().atMost(Duration.ofSeconds(10)).until(() -> failsAtOnce(first));
    } finally {
      clients.close();
    }
  }

  @Test
  void closeClosesAnOwnedClientButNeverABorrowedOne() throws Exception {
    RenewableClient owned = RenewableClient.owned(EtcdConnection.of(etcd.endpoints()));
    Client ownedClient = owned.client();
    try (Client mine = EtcdConnection.of(etcd.endpoints()).connect()) {
      RenewableClient borrowed = RenewableClient.borrowed(mine);

      owned.close();
      borrowed.close();

      assertThat(failsAtOnce(ownedClient)).isTrue();
      assertThat(answers(mine)).isTrue();
    }
  }

  private static boolean answers(Client c) throws Exception {
    return c.getKVClient().get(KEY).get(10, TimeUnit.SECONDS).getHeader().getRevision() > 0;
  }

  private static boolean failsAtOnce(Client c) {
    CompletableFuture<?> f;
    try {
      f = c.getKVClient().get(KEY);
    } catch (RuntimeException closed) {
      return true;
    }
    try {
      f.get(2, TimeUnit.SECONDS);
      return false;
    } catch (Exception e) {
      return !(e instanceof java.util.concurrent.TimeoutException);
    }
  }
}
