package io.steelyard.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import java.io.IOException;
import java.nio.channels.ClosedChannelException;
import org.junit.jupiter.api.Test;

class TransportLossTest {

  @Test
  void unavailableIsATransportLossWhateverItsCause() {
    assertThat(TransportLoss.endedByTransportLoss(Status.UNAVAILABLE)).isTrue();
    assertThat(TransportLoss.endedByTransportLoss(
        Status.UNAVAILABLE.withDescription("io exception").withCause(new IOException("Connection reset by peer"))))
        .isTrue();
    assertThat(TransportLoss.unknownChannelClosed(Status.UNAVAILABLE)).isFalse();
  }

  @Test
  void unknownIsOneOnlyWithAClosedChannelExceptionAmongItsCauses() {
    // As grpc-java builds them: statusFromThrowable wraps netty's cause-less exception in a new one.
    Status channelClosed = Status.UNKNOWN.withDescription("channel closed")
        .withCause(new ClosedChannelException().initCause(new ClosedChannelException()));
    Status wrapped = Status.UNKNOWN.withCause(new RuntimeException(new ClosedChannelException()));
    assertThat(TransportLoss.endedByTransportLoss(channelClosed)).isTrue();
    assertThat(TransportLoss.unknownChannelClosed(channelClosed)).isTrue();
    assertThat(TransportLoss.unknownChannelClosed(wrapped)).isTrue();

    // An UNKNOWN without that cause may be the server's own answer (an exception in a handler).
    assertThat(TransportLoss.endedByTransportLoss(Status.UNKNOWN.withDescription("channel closed"))).isFalse();
    assertThat(TransportLoss.endedByTransportLoss(Status.UNKNOWN.withCause(new IllegalStateException()))).isFalse();
  }

  @Test
  void otherCodesAreNot() {
    assertThat(TransportLoss.endedByTransportLoss(Status.DEADLINE_EXCEEDED)).isFalse();
    assertThat(TransportLoss.endedByTransportLoss(
        Status.CANCELLED.withCause(new ClosedChannelException()))).isFalse();
    assertThat(TransportLoss.unknownChannelClosed(Status.INTERNAL.withCause(new ClosedChannelException()))).isFalse();
  }
}
