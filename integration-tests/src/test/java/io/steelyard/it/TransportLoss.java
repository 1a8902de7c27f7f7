package io.steelyard.it;

import io.grpc.Status;
import java.nio.channels.ClosedChannelException;

/**
 * The statuses grpc-java's netty transport ends a call with when the transport under it dies: the
 * one rule every test that kills a server under load asserts failed calls by.
 *
 * <p>UNAVAILABLE: the connection's reset or GOAWAY, or a write that noticed the closure and kept
 * its cause. UNKNOWN "channel closed": a write found the channel already closed and netty's
 * cause-less {@link ClosedChannelException} carries no more (grpc-java's {@code
 * io.grpc.netty.Utils.statusFromThrowable}, and {@code NettyClientTransport.statusFromFailedFuture}
 * before the transport knows why it closed). Both are made on the client, so no server status is
 * taken for one: an UNKNOWN counts only with that exception in its causes. The UNKNOWN one is
 * reported for a stream already on the wire, so grpc-java retries it neither transparently nor
 * under a retry policy that lists only UNAVAILABLE.
 */
public final class TransportLoss {

  private TransportLoss() {}

  /** UNAVAILABLE, or UNKNOWN "channel closed" with a {@link ClosedChannelException} in its causes. */
  public static boolean endedByTransportLoss(Status status) {
    return status.getCode() == Status.Code.UNAVAILABLE || unknownChannelClosed(status);
  }

  /** UNKNOWN with a {@link ClosedChannelException} in its causes: the one a retry on UNAVAILABLE lets through. */
  public static boolean unknownChannelClosed(Status status) {
    if (status.getCode() != Status.Code.UNKNOWN) {
      return false;
    }
    for (Throwable t = status.getCause(); t != null; t = t.getCause()) {
      if (t instanceof ClosedChannelException) {
        return true;
      }
    }
    return false;
  }
}
