package io.steelyard.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.steelyard.examples.proto.GreeterGrpc;
import io.steelyard.examples.proto.HelloRequest;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;

/** {@code --fail-percent}, {@code --delay} and {@code --meta}: what they do and what they refuse. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class GreeterFaultsTest {

  @Test
  void failuresAreSpreadEvenlyExactlyPercentPerHundredCalls() {
    GreeterFaults half = new GreeterFaults(50, Duration.ZERO);
    assertThat(LongStream.rangeClosed(1, 6).mapToObj(half::fails)).containsExactly(false, true, false, true, false, true);
    for (int percent : new int[] {0, 1, 10, 33, 100}) {
      GreeterFaults faults = new GreeterFaults(percent, Duration.ZERO);
      assertThat(LongStream.rangeClosed(1, 100).filter(faults::fails).count()).as("percent %s", percent).isEqualTo(percent);
    }
  }

  @Test
  void aServerFailingHalfItsCallsAnswersTheOtherHalf() {
    GreeterServer server = GreeterServer.builder().register(false).drainDelay(Duration.ZERO)
        .faults(new GreeterFaults(50, Duration.ZERO)).build().start();
    ManagedChannel channel = ManagedChannelBuilder.forTarget(server.address()).usePlaintext().build();
    try {
      List<Status.Code> codes = new ArrayList<>();
      for (int i = 0; i < 10; i++) {
        try {
          GreeterGrpc.newBlockingStub(channel).sayHello(HelloRequest.newBuilder().setName("t").build());
          codes.add(Status.Code.OK);
        } catch (StatusRuntimeException e) {
          codes.add(e.getStatus().getCode());
        }
      }
      assertThat(codes).filteredOn(c -> c == Status.Code.UNAVAILABLE).hasSize(5);
      assertThat(codes).filteredOn(c -> c == Status.Code.OK).hasSize(5);
    } finally {
      channel.shutdownNow();
      server.close();
    }
  }

  @Test
  void aDelayedAnswerMissesAShorterDeadlineAndReachesALongerOne() {
    GreeterServer server = GreeterServer.builder().register(false).drainDelay(Duration.ZERO)
        .faults(new GreeterFaults(0, Duration.ofMillis(500))).build().start();
    ManagedChannel channel = ManagedChannelBuilder.forTarget(server.address()).usePlaintext().build();
    try {
      HelloRequest request = HelloRequest.newBuilder().setName("t").build();
      assertThatThrownBy(() -> GreeterGrpc.newBlockingStub(channel).withDeadlineAfter(100, TimeUnit.MILLISECONDS)
              .sayHello(request))
          .isInstanceOfSatisfying(StatusRuntimeException.class,
              e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.DEADLINE_EXCEEDED));
      assertThat(GreeterGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS)
              .sayHello(request).getServerAddress())
          .isEqualTo(server.address());
    } finally {
      channel.shutdownNow();
      server.close();
    }
  }

  @Test
  void badFaultsAreRefusedWithTheOffendingValue() {
    assertThatThrownBy(() -> new GreeterFaults(101, Duration.ZERO)).hasMessageContaining("101");
    assertThatThrownBy(() -> new GreeterFaults(0, Duration.ofMillis(-1))).hasMessageContaining("delay");
  }

  @Test
  void helpNamesTheNewOptions() {
    StringWriter out = new StringWriter();
    CommandLine cli = GreeterServerMain.commandLine();
    cli.setOut(new PrintWriter(out));
    assertThat(cli.execute("--help")).isZero();
    assertThat(out.toString()).contains("--meta=KEY=VALUE", "--fail-percent=P", "--delay=DURATION");
  }

  @Test
  void badValuesExitTwoWithOneLine() {
    assertBadValue("greeter-server: --fail-percent: 101 (expected: 0..100)", "--fail-percent", "101");
    assertBadValue("greeter-server: Invalid value for option '--fail-percent'", "--fail-percent", "half");
    assertBadValue("greeter-server: Invalid value for option '--delay'", "--delay", "soon");
    assertBadValue("greeter-server: Value for option option '--meta' (KEY=VALUE) should be in KEY=VALUE format", "--meta", "version");
    assertBadValue("greeter-server: --meta: weight (expected: --weight W)", "--meta", "weight=3");
    assertBadValue("greeter-server: zone", "--meta", "zone=a", "--zone", "b");
  }

  private static void assertBadValue(String start, String... args) {
    StringWriter err = new StringWriter();
    CommandLine cli = GreeterServerMain.commandLine();
    cli.setErr(new PrintWriter(err));
    assertThat(cli.execute(args)).as("exit code of %s", List.of(args)).isEqualTo(2);
    assertThat(err.toString().lines()).as("stderr of %s", List.of(args)).hasSize(1).first().asString().startsWith(start);
  }
}
