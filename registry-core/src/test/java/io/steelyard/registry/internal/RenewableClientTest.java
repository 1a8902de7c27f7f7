package io.steelyard.registry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.common.base.Ticker;
import io.etcd.jetcd.Client;
import io.steelyard.registry.EtcdConnection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * When {@link RenewableClient} replaces a client, under a fake ticker. jetcd dials lazily, so
 * nothing here contacts etcd; {@code RenewableClientIT} checks the clients against a real one.
 */
class RenewableClientTest {

  private static final EtcdConnection ETCD = EtcdConnection.of("http://127.0.0.1:9");

  private long nowNanos;
  private final Ticker ticker =
      new Ticker() {
        @Override
        public long read() {
          return nowNanos;
        }
      };
  private final List<Runnable> closes = new ArrayList<>();
  private final RenewableClient clients =
      new RenewableClient(ETCD, Duration.ofSeconds(10), ticker, closes::add);

  @AfterEach
  void closeEverything() {
    closes.forEach(Runnable::run);
    clients.close();
  }

  private void advance(Duration d) {
    nowNanos += d.toNanos();
  }

  @Test
  void aFailingClientIsReplacedOnceTheMinimumIntervalHasPassed() {
    Client first = clients.client();
    advance(Duration.ofSeconds(10));

    assertThat(clients.renew(first)).isTrue();

    assertThat(clients.client()).isNotSameAs(first);
    assertThat(closes).hasSize(1); // the replaced client, handed to the closer
    assertThat(clients.owned()).isTrue();
  }

  @Test
  void noRenewalWithinTheMinimumIntervalOfTheLastOne() {
    Client first = clients.client();
    advance(Duration.ofSeconds(9));

    assertThat(clients.renew(first)).isFalse();

    advance(Duration.ofSeconds(1));
    assertThat(clients.renew(first)).isTrue();
    Client second = clients.client();
    advance(Duration.ofSeconds(9));
    assertThat(clients.renew(second)).isFalse();
    assertThat(clients.client()).isSameAs(second);
  }

  @Test
  void aClientSomeoneAlreadyReplacedIsNotReplacedAgain() {
    Client first = clients.client();
    advance(Duration.ofSeconds(10));
    clients.renew(first);
    Client second = clients.client();
    advance(Duration.ofSeconds(10));

    // A second user that saw the first client fail reports it late.
    assertThat(clients.renew(first)).isFalse();

    assertThat(clients.client()).isSameAs(second);
    assertThat(closes).hasSize(1);
  }

  @Test
  void nothingIsRenewedAfterClose() {
    Client first = clients.client();
    clients.close();
    advance(Duration.ofMinutes(1));

    assertThat(clients.renew(first)).isFalse();
    assertThat(clients.client()).isSameAs(first);
  }

  @Test
  void aBorrowedClientIsNeverReplaced() {
    try (Client mine = ETCD.connect()) {
      RenewableClient borrowed = RenewableClient.borrowed(mine);

      assertThat(borrowed.owned()).isFalse();
      assertThat(borrowed.renew(mine)).isFalse();
      assertThat(borrowed.client()).isSameAs(mine);
    }
  }
}
